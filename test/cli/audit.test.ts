/**
 * `gateway audit verify | list --config FILE`: the trail found from the gateway's configuration (the
 * `audit` key, or the providers' backend), exit 0 for a chain that holds, 1 for a broken one, an
 * unexpected head or a failure, 2 for usage; `list` as text, JSON lines and `--since`. Run in this
 * process, and once as the real dist/cli.js.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import { runAudit } from '../../src/cli/audit.js';
import { openFileAuditStore } from '../../src/audit/file.js';
import { openAuditPool } from '../../src/audit/pool.js';
import { GATEWAY_SCHEMA } from '../../src/backends/postgres/schema.js';
import { createPostgresAuditStore } from '../../src/audit/postgres.js';
import type { AuditEntry } from '../../src/audit/entry.js';
import { baseConfig, merge } from '../helpers/gateway.js';
import { createDatabase, requirePostgres, runCli } from '../helpers/postgres.js';
import { gatewayCli } from '../helpers/tokens.js';
import { manualClock, newEntry, silent } from '../audit/helpers.js';

const T = Date.parse('2026-05-01T08:00:00.000Z');

function writeConfig(dir: string, over: Record<string, unknown> = {}): string {
  const file = path.join(dir, 'gateway.yaml');
  writeFileSync(file, stringify(merge(baseConfig(), over)));
  return file;
}

/** A file trail of four entries a second apart, closed; resolves with them. */
async function fileTrail(file: string): Promise<AuditEntry[]> {
  const clock = manualClock(T);
  const store = await openFileAuditStore(file, { logger: silent, now: clock.now });
  const written: AuditEntry[] = [];
  for (const status of ['intent', 'success', 'intent', 'failure'] as const) {
    written.push(
      await store.append(
        newEntry({ status, commit_id: `00000000-0000-4000-8000-00000000000${written.length >> 1}` }),
      ),
    );
    clock.tick(1000);
  }
  await store.close();
  return written;
}

const audit = (argv: string[], env: NodeJS.ProcessEnv = {}) => runCli(runAudit, argv, env);

t.test('verify: 0 when the chain holds, 1 naming the first broken entry or an unexpected head', async (t) => {
  const dir = t.testdir();
  const config = writeConfig(dir, { audit: { store: { type: 'file', path: 'trail.jsonl' } } });
  const written = await fileTrail(path.join(dir, 'trail.jsonl'));
  const head = `${written[3]?.id}:${written[3]?.hash}`;

  const ok = await audit(['verify', '--config', config, '--expect-head', head]);
  t.equal(ok.code, 0, ok.stderr);
  t.match(ok.stdout, `4 entries, the chain holds; head ${head}`);

  const moved = await audit(['verify', '--config', config, '--expect-head', `3:${written[2]?.hash}`]);
  t.equal(moved.code, 1);
  t.match(moved.stdout, 'the head is 4:');

  const file = path.join(dir, 'trail.jsonl');
  const lines = readFileSync(file, 'utf8').split('\n');
  lines[2] = lines[2]?.replace('"alice"', '"mallory"') ?? '';
  writeFileSync(file, lines.join('\n'));
  const broken = await audit(['verify', '--config', config]);
  t.equal(broken.code, 1);
  t.match(broken.stdout, 'the chain breaks at line 3: its hash does not match');
  t.match(broken.stderr, 'the chain breaks at line 3');
});

t.test('verify lists intents without outcome and still exits 0', async (t) => {
  const dir = t.testdir();
  // No audit key: the trail follows the local providers file.
  const config = writeConfig(dir);
  const trail = path.join(dir, 'sso-providers.json.audit.jsonl');
  const written = await fileTrail(trail);
  const store = await openFileAuditStore(trail, { logger: silent });
  const lone = await store.append(newEntry({ commit_id: 'dead0000-0000-4000-8000-000000000000' }));
  await store.close();
  const ran = await audit(['verify', '--config', config]);
  t.equal(ran.code, 0, ran.stderr);
  t.match(ran.stdout, `${written.length + 1} entries, the chain holds`);
  t.match(ran.stdout, `intents without outcome (1):\n  ${lone.commit_id}  id 5  ${lone.created_at}`);
});

t.test('list: text, JSON lines as stored, and --since', async (t) => {
  const dir = t.testdir();
  const config = writeConfig(dir, { audit: { store: { type: 'file', path: 'trail.jsonl' } } });
  const written = await fileTrail(path.join(dir, 'trail.jsonl'));
  const json = await audit(['list', '--config', config, '--json']);
  t.equal(json.code, 0, json.stderr);
  t.same(
    json.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l)),
    written,
    'each entry, hash included',
  );
  const since = await audit(['list', '--config', config, '--since', new Date(T + 2000).toISOString()]);
  t.equal(since.code, 0);
  const shown = since.stdout.trim().split('\n');
  t.equal(shown.length, 2, 'entries at or after --since');
  t.match(
    shown[0],
    /^3\t2026-05-01T08:00:02\.000Z\tUpdateSSOIdentityProvider\tintent\talice <alice@example\.com>\t/,
  );
});

t.test('usage mistakes exit 2; a configuration without a trail, or a missing one, exits 1', async (t) => {
  const dir = t.testdir();
  const config = writeConfig(dir);
  for (const argv of [
    [],
    ['check'],
    ['verify'],
    ['verify', '--config', config, '--since', '2026-01-01T00:00:00Z'],
    ['list', '--config', config, '--expect-head', '1:x'],
    ['verify', '--config', config, '--expect-head', 'head'],
    ['list', '--config', config, '--since', 'yesterday'],
    ['verify', '--config', config, 'extra'],
  ]) {
    const ran = await audit(argv);
    t.equal(ran.code, 2, argv.join(' '));
    t.match(ran.stderr, 'usage: gateway audit');
  }
  t.equal((await audit(['--help'])).code, 0);

  const missing = await audit(['verify', '--config', config]);
  t.equal(missing.code, 1);
  t.match(missing.stderr, 'sso-providers.json.audit.jsonl does not exist');

  const upstreamConfig = baseConfig();
  (upstreamConfig.backends as Record<string, unknown>).sso_providers = {
    type: 'upstream',
    url: 'http://127.0.0.1:9',
    auth: { type: 'client' },
  };
  const upstream = path.join(dir, 'upstream.yaml');
  writeFileSync(upstream, stringify(upstreamConfig));
  const none = await audit(['list', '--config', upstream]);
  t.equal(none.code, 1);
  t.match(none.stderr, 'configures no audit trail');

  const wrong = writeConfig(dir, { audit: { store: { type: 'file', path: 'x', bogus: 1 } } });
  const refused = await audit(['verify', '--config', wrong]);
  t.equal(refused.code, 1);
  t.match(refused.stderr, 'audit.store.bogus: unknown key');
});

if (await requirePostgres(t)) {
  t.test('a PostgreSQL trail named by reference: verify, list, and a tampered row', async (t) => {
    const url = await createDatabase(t);
    const pool = await openAuditPool({ url, schema: GATEWAY_SCHEMA });
    const store = createPostgresAuditStore(pool);
    for (let i = 0; i < 3; i++) await store.append(newEntry());
    await pool.close();
    const config = writeConfig(t.testdir(), {
      audit: { store: { type: 'postgres', url: '${env:AUDIT_URL}' } },
    });
    const env = { AUDIT_URL: url };
    const ok = await audit(['verify', '--config', config], env);
    t.equal(ok.code, 0, ok.stderr);
    t.match(ok.stdout, 'audit trail audit_logs (PostgreSQL): 3 entries, the chain holds');
    const listed = await audit(['list', '--config', config, '--json'], env);
    t.equal(listed.stdout.trim().split('\n').length, 3);
    const { sql } = await import('../helpers/postgres.js');
    await sql(url, 'DELETE FROM audit_logs WHERE id = 2');
    const broken = await audit(['verify', '--config', config], env);
    t.equal(broken.code, 1);
    t.match(broken.stdout, 'the chain breaks at id 3: id 3 follows id 1');

    const empty = await createDatabase(t);
    const none = await audit(['verify', '--config', config], { AUDIT_URL: empty });
    t.equal(none.code, 1);
    t.match(none.stderr, 'no audit_logs table');
  });
}

t.test('the real command: gateway audit verify exits 0, 1 and 2', async (t) => {
  const dir = t.testdir();
  const config = writeConfig(dir, { audit: { store: { type: 'file', path: 'trail.jsonl' } } });
  await fileTrail(path.join(dir, 'trail.jsonl'));
  const ok = await gatewayCli('audit', 'verify', '--config', config);
  t.equal(ok.code, 0, ok.stderr);
  const usage = await gatewayCli('audit', 'verify');
  t.equal(usage.code, 2);
  const file = path.join(dir, 'trail.jsonl');
  writeFileSync(file, readFileSync(file, 'utf8').split('\n').slice(1).join('\n'));
  const broken = await gatewayCli('audit', 'verify', '--config', config);
  t.equal(broken.code, 1);
  t.match(broken.stdout, 'the chain breaks at line 1: the trail starts at id 2, not 1');
});
