/**
 * The file trail's one writer and its crash recovery, with real files and processes: a torn last
 * line moved aside (and the chain continued from the last whole entry), a second process refused
 * naming the holder, a stale lock taken over, an unwritable directory refused, a file changed or
 * removed behind the writer's back refused (failing the intent closed), one process sharing a trail.
 */
import { spawn } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { createMetrics } from '../../src/observability/metrics.js';
import { openFileAuditStore } from '../../src/audit/file.js';
import { createAuditTrail } from '../../src/audit/trail.js';
import { verifyTrail } from '../../src/audit/verify.js';
import { createLogger } from '../../src/observability/logger.js';
import { newEntry, silent } from './helpers.js';

const SCRIPT = path.join(import.meta.dirname, 'open-trail.mjs');

/** Runs the second-process script on `file` (as `uid` when given); resolves with what it said. */
function secondProcess(
  file: string,
  uid?: number,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SCRIPT, file], {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(uid === undefined ? {} : { uid, gid: uid }),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** The pid of a process that has exited. */
function deadPid(): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', '0']);
    child.on('error', reject);
    child.on('exit', () => resolve(child.pid as number));
  });
}

async function writeTrail(file: string, n: number): Promise<string> {
  const store = await openFileAuditStore(file, { logger: silent });
  for (let i = 0; i < n; i++) await store.append(newEntry({ status: i % 2 === 0 ? 'intent' : 'success' }));
  await store.close();
  return readFileSync(file, 'utf8');
}

t.test(
  'a last line cut by a crash is moved aside; the chain continues from the last whole entry',
  async (t) => {
    for (const torn of ['{"id":4,"created_at":"2026-', 'garbage that is not JSON\n', '\u0000\u0000\u0000']) {
      const dir = t.testdir();
      const file = path.join(dir, 'trail.jsonl');
      const whole = await writeTrail(file, 3);
      appendFileSync(file, torn);
      const lines: Array<Record<string, unknown>> = [];
      const logger = createLogger('info', { write: (l: string) => void lines.push(JSON.parse(l)) });
      const store = await openFileAuditStore(file, { logger });
      t.equal(readFileSync(file, 'utf8'), whole, 'the trail is cut back to its whole entries');
      const aside = readdirSync(dir).filter((f) => f.startsWith('trail.jsonl.torn-'));
      t.equal(aside.length, 1);
      t.equal(
        readFileSync(path.join(dir, aside[0] as string), 'utf8'),
        torn,
        'the torn bytes are kept aside',
      );
      t.match(lines, [{ level: 'warn', msg: /moved aside/, moved_to: path.join(dir, aside[0] as string) }]);
      t.equal((await store.append(newEntry())).id, 4);
      await store.close();
      t.ok((await verifyTrail(store.walk())).ok, 'the chain holds');
    }
  },
);

t.test(
  'a torn line after a line that is no entry either: refused, never continued from a wrong hash',
  async (t) => {
    const file = path.join(t.testdir(), 'trail.jsonl');
    await writeTrail(file, 2);
    appendFileSync(file, 'edited by hand\n{"id":4,');
    await t.rejects(openFileAuditStore(file, { logger: silent }), {
      message: /the entry before the torn line cannot be read either/,
    });
    t.notOk(existsSync(`${file}.lock`), 'the lock is not kept by a refused open');
  },
);

t.test('a trail holding only a torn line starts again at id 1', async (t) => {
  const file = path.join(t.testdir(), 'trail.jsonl');
  writeFileSync(file, '{"id":1,');
  const store = await openFileAuditStore(file, { logger: silent });
  t.teardown(() => store.close());
  t.equal((await store.append(newEntry())).id, 1);
});

t.test('a second process is refused, naming the holder; it writes once the holder closes', async (t) => {
  const file = path.join(t.testdir(), 'trail.jsonl');
  const store = await openFileAuditStore(file, { logger: silent });
  await store.append(newEntry());
  const refused = await secondProcess(file);
  t.equal(refused.code, 1);
  t.match(refused.stderr, `is locked by process ${process.pid} on ${hostname()}`);
  await store.close();
  t.notOk(existsSync(`${file}.lock`), 'the lock is released on close');
  const second = await secondProcess(file);
  t.equal(second.code, 0, second.stderr);
  t.equal(second.stdout, 'appended 2\n', 'the chain continues in the other process');
});

t.test('a stale lock (a dead process, or cut by a crash) is taken over; another host`s is not', async (t) => {
  const dir = t.testdir();
  const file = path.join(dir, 'trail.jsonl');
  const lock = `${file}.lock`;
  const pid = await deadPid();
  writeFileSync(lock, JSON.stringify({ pid, host: hostname(), since: '2026-01-01T00:00:00.000Z' }));
  let store = await openFileAuditStore(file, { logger: silent });
  t.equal(JSON.parse(readFileSync(lock, 'utf8')).pid, process.pid, 'the lock is this process`s now');
  await store.close();

  writeFileSync(lock, '{"pid":');
  store = await openFileAuditStore(file, { logger: silent });
  await store.close();

  writeFileSync(
    lock,
    JSON.stringify({ pid: process.pid, host: 'elsewhere', since: '2026-01-01T00:00:00.000Z' }),
  );
  await t.rejects(openFileAuditStore(file, { logger: silent }), {
    message: new RegExp(`locked by process ${process.pid} on elsewhere`),
  });
  unlinkSync(lock);
});

t.test('a directory that is not writable is refused at open', async (t) => {
  const dir = path.join(t.testdir(), 'read-only');
  mkdirSync(dir, { mode: 0o555 });
  const file = path.join(dir, 'trail.jsonl');
  if (process.getuid?.() === 0) {
    // root writes anywhere: the refusal is seen by a process of an ordinary user.
    const refused = await secondProcess(file, 65534);
    t.equal(refused.code, 1);
    t.match(refused.stderr, /not writable \(EACCES\)/);
  } else {
    await t.rejects(openFileAuditStore(file, { logger: silent }), { message: /not writable \(EACCES\)/ });
  }
  t.notOk(existsSync(file));
});

t.test('a trail changed or removed behind the writer is refused; the intent fails closed', async (t) => {
  const file = path.join(t.testdir(), 'trail.jsonl');
  const store = await openFileAuditStore(file, { logger: silent });
  t.teardown(() => store.close());
  const trail = createAuditTrail(store, { logger: silent, metrics: createMetrics().audit });
  const start = {
    actor: { id: 'a', name: 'a', email: '' },
    requestId: 'r',
    sourceIp: '127.0.0.1',
    ssoProviderId: 1,
    provider: { id: 1, name: 'p' },
    requested: ['name', 'display_name'],
  };
  await trail.update(start).intent();
  appendFileSync(file, '{"id":2}\n');
  await t.rejects(trail.update(start).intent(), { status: 503, message: 'audit trail unavailable' });
  t.notOk(store.ready());
  unlinkSync(file);
  await t.rejects(store.append(newEntry()), { message: /is gone \(ENOENT\)/ });
  t.notOk(existsSync(file), 'never recreated: a new file would start another chain');
});

t.test('a trail made read-only, moved or cut is refused; made writable again, it goes on', async (t) => {
  const dir = t.testdir();
  const file = path.join(dir, 'trail.jsonl');
  const store = await openFileAuditStore(file, { logger: silent });
  t.teardown(() => store.close());
  await store.append(newEntry());
  chmodSync(file, 0o444);
  await t.rejects(store.append(newEntry()), { message: /was made read-only/ });
  chmodSync(file, 0o640);
  t.equal((await store.append(newEntry())).id, 2, 'the chain goes on where it was');
  t.ok(store.ready());
  renameSync(file, `${file}.1`);
  writeFileSync(file, '');
  await t.rejects(store.append(newEntry()), { message: /was moved or replaced/ });
  renameSync(`${file}.1`, file);
  truncateSync(file, 10);
  await t.rejects(store.append(newEntry()), { message: /was changed by another writer/ });
});

t.test('concurrent appends share writes and keep one chain', async (t) => {
  const file = path.join(t.testdir(), 'trail.jsonl');
  const store = await openFileAuditStore(file, { logger: silent });
  const ids = await Promise.all(
    Array.from({ length: 100 }, () => store.append(newEntry()).then((e) => e.id)),
  );
  t.same(
    ids,
    Array.from({ length: 100 }, (_, i) => i + 1),
    'ids in the order the appends were made',
  );
  await store.close();
  t.match(await verifyTrail(store.walk()), { ok: true, entries: 100 });
  await t.rejects(store.append(newEntry()), { message: /is closed/ });
});

t.test(
  'one process opening a trail twice (a reload) shares it; the lock goes with the last close',
  async (t) => {
    const file = path.join(t.testdir(), 'trail.jsonl');
    const first = await openFileAuditStore(file, { logger: silent });
    const second = await openFileAuditStore(file, { logger: silent });
    t.equal((await first.append(newEntry())).id, 1);
    t.equal((await second.append(newEntry())).id, 2);
    await first.close();
    t.equal((await second.append(newEntry())).id, 3, 'the other still writes');
    t.ok(existsSync(`${file}.lock`));
    await second.close();
    t.notOk(existsSync(`${file}.lock`));
    const reopened = await openFileAuditStore(file, { logger: silent });
    t.equal((await reopened.append(newEntry())).id, 4, 'reopened, the chain continues');
    await reopened.close();
    t.ok((await verifyTrail(reopened.walk())).ok);
  },
);
