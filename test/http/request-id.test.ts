/** Request ids: random version-4 UUIDs, each new, across batches. */
import t from 'tap';
import { RequestIds } from '../../src/http/request-id.js';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

t.test('every id is a version 4 UUID, none repeats, across several batches', async (t) => {
  const ids = new RequestIds();
  const seen = new Set<string>();
  for (let i = 0; i < 1000; i++) {
    const id = ids.next();
    if (!UUID_V4.test(id)) t.fail(`not a v4 UUID: ${id}`);
    seen.add(id);
  }
  t.equal(seen.size, 1000, 'a thousand different ids (about eight batches)');
  const other = new RequestIds();
  t.notOk(seen.has(other.next()), "another instance's ids are its own");
});

t.test('the random bits are spread: every hex digit appears at every random position', async (t) => {
  const ids = new RequestIds();
  const digits = Array.from({ length: 36 }, () => new Set<string>());
  for (let i = 0; i < 2000; i++) [...ids.next()].forEach((c, at) => digits[at]?.add(c));
  const fixed = new Map([
    [8, 1],
    [13, 1],
    [14, 1],
    [18, 1],
    [19, 4],
    [23, 1],
  ]);
  digits.forEach((seen, at) => t.equal(seen.size, fixed.get(at) ?? 16, `position ${at}`));
});
