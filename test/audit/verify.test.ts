/**
 * `verify` on each real store against what an attacker with write access does: an edited entry, one
 * deleted from the middle, a reordered pair, a cut tail (caught against the head noted earlier).
 * Each names the first entry where the chain breaks; an untouched trail holds.
 */
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import t from 'tap';
import type { AuditEntry } from '../../src/audit/entry.js';
import { readFileTrail } from '../../src/audit/file-read.js';
import type { AuditStore } from '../../src/audit/store.js';
import { parseExpectedHead, verifyTrail } from '../../src/audit/verify.js';
import { fileUnderTest, newEntry, type StoreUnderTest, storesUnderTest } from './helpers.js';

const ENTRIES = 6;

async function fill(store: AuditStore): Promise<AuditEntry[]> {
  const written: AuditEntry[] = [];
  for (let i = 0; i < ENTRIES; i++) {
    const commit = `00000000-0000-4000-8000-${String(Math.floor(i / 2)).padStart(12, '0')}`;
    written.push(
      await store.append(newEntry({ status: i % 2 === 0 ? 'intent' : 'success', commit_id: commit })),
    );
  }
  return written;
}

/** Where `kind` names entry `id` (a file by its line, a table by its id). */
const at = (s: StoreUnderTest, id: number, line = id) => (s.kind === 'file' ? `line ${line}` : `id ${id}`);

t.test('an untouched trail holds, and its head is the last entry', async (t) => {
  for (const s of await storesUnderTest(t)) {
    const written = await fill(s.store);
    const last = written.at(-1) as AuditEntry;
    const report = await verifyTrail(s.store.walk(), { id: last.id, hash: last.hash });
    t.match(
      report,
      { ok: true, entries: ENTRIES, head: { id: ENTRIES, hash: last.hash }, pending: [] },
      s.kind,
    );
  }
});

t.test('an edited entry breaks the chain at that entry', async (t) => {
  for (const s of await storesUnderTest(t)) {
    await fill(s.store);
    await s.edit(3);
    const report = await verifyTrail(s.store.walk());
    t.notOk(report.ok, s.kind);
    t.equal(report.broken?.at, at(s, 3));
    t.match(report.broken?.reason, /hash does not match/);
    t.equal(report.entries, 2, 'the entries before it hold');
  }
});

t.test('an entry deleted from the middle breaks the chain at the one after it', async (t) => {
  for (const s of await storesUnderTest(t)) {
    await fill(s.store);
    await s.remove(3);
    const report = await verifyTrail(s.store.walk());
    t.notOk(report.ok, s.kind);
    t.equal(report.broken?.at, at(s, 4, 3));
    t.match(report.broken?.reason, /id 4 follows id 2/);
  }
});

t.test('a reordered pair breaks the chain at the first of them', async (t) => {
  for (const s of await storesUnderTest(t)) {
    await fill(s.store);
    await s.swap(2);
    const report = await verifyTrail(s.store.walk());
    t.notOk(report.ok, s.kind);
    t.equal(report.broken?.at, s.kind === 'file' ? 'line 2' : 'id 2');
    t.match(report.broken?.reason, s.kind === 'file' ? /id 3 follows id 1/ : /hash does not match/);
  }
});

t.test('a cut tail holds as a chain but not against the head noted before', async (t) => {
  for (const s of await storesUnderTest(t)) {
    const written = await fill(s.store);
    const noted = written.at(-1) as AuditEntry;
    await s.cutAfter(4);
    const expect = parseExpectedHead(`${noted.id}:${noted.hash}`);
    t.ok((await verifyTrail(s.store.walk())).ok, `${s.kind}: without the noted head it holds`);
    const report = await verifyTrail(s.store.walk(), expect);
    t.notOk(report.ok, s.kind);
    t.equal(report.broken?.at, 'head');
    t.match(report.broken?.reason, `the head is 4:${written[3]?.hash}, expected ${noted.id}:${noted.hash}`);
    t.match(report.broken?.reason, /a cut tail/);
  }
});

t.test('a head that moved on, or another hash at the noted id, differs from the expected head', async (t) => {
  for (const s of await storesUnderTest(t)) {
    const written = await fill(s.store);
    const earlier = written[2] as AuditEntry;
    const moved = await verifyTrail(s.store.walk(), { id: earlier.id, hash: earlier.hash });
    t.notOk(moved.ok, s.kind);
    t.match(moved.broken?.reason, /entry 3 matches, and 3 entries follow it/);
    const other = await verifyTrail(s.store.walk(), { id: ENTRIES, hash: 'f'.repeat(64) });
    t.match(other.broken?.reason, /entry 6 has another hash/);
  }
});

t.test('intents without outcome are listed by commit id and change nothing', async (t) => {
  for (const s of await storesUnderTest(t)) {
    await fill(s.store);
    const lone = await s.store.append(
      newEntry({ status: 'intent', commit_id: 'dead0000-0000-4000-8000-000000000000' }),
    );
    const report = await verifyTrail(s.store.walk());
    t.ok(report.ok, s.kind);
    t.same(report.pending, [{ commit_id: lone.commit_id, id: lone.id, created_at: lone.created_at }]);
  }
});

t.test('--expect-head is ID:HASH', async (t) => {
  t.same(parseExpectedHead(`12:${'A'.repeat(64)}`), { id: 12, hash: 'a'.repeat(64) });
  t.equal(parseExpectedHead('12'), undefined);
  t.equal(parseExpectedHead(`x:${'a'.repeat(64)}`), undefined);
  t.equal(parseExpectedHead(`1:${'a'.repeat(63)}`), undefined);
});

t.test(
  'a file`s last line being written is noted, not a break; a line that is not JSON is one',
  async (t) => {
    const s = await fileUnderTest(t);
    await fill(s.store);
    appendFileSync(s.location, '{"id":7,"created_at":"2026-');
    const report = await verifyTrail(readFileTrail(s.location));
    t.match(report, { ok: true, entries: ENTRIES, incompleteTail: 'line 7' });
    writeFileSync(
      s.location,
      `${readFileSync(s.location, 'utf8').split('\n').slice(0, 2).join('\n')}\nnot json\n`,
    );
    const broken = await verifyTrail(readFileTrail(s.location));
    t.match(broken, { ok: false, entries: 2, broken: { at: 'line 3', reason: 'not a JSON entry' } });
  },
);
