/**
 * The memory store's sliding log on a frozen clock: exact in every interval of the window, the whole
 * limit at once after an idle window, and the largest limit (10,000) held in full.
 */
import t from 'tap';
import { MemoryStore } from '../../src/ratelimit/memory.js';
import { ruleOf } from '../../src/ratelimit/store.js';

/** The most admissions in any half-open interval of `window` ms. */
function busiest(times: number[], window: number): number {
  let most = 0;
  let start = 0;
  for (let end = 0; end < times.length; end++) {
    while ((times[end] as number) - (times[start] as number) >= window) start++;
    most = Math.max(most, end - start + 1);
  }
  return most;
}

t.test('three times the limit for several windows, then bursts at every phase', async (t) => {
  let now = 0;
  const store = new MemoryStore(10, () => now);
  const rule = ruleOf('p', 10, 1000);
  const admitted: number[] = [];
  const ask = () => {
    const reply = store.decide('token:a', [rule], true);
    if (reply[0] === 1) admitted.push(now);
    return reply;
  };
  // 30 a second, with jitter, for 5 s.
  for (let i = 0; i < 150; i++) {
    now = i * (1000 / 30) + ((i * 7919) % 13);
    ask();
  }
  // Bursts of twice the limit at phases through the window.
  for (const phase of [0, 1, 250, 499, 500, 999, 1000, 1001]) {
    now += phase;
    for (let i = 0; i < 20; i++) ask();
  }
  t.equal(busiest(admitted, 1000), 10, 'never more than the limit in any window, and the limit is reached');
  t.ok(admitted.length >= 50, `admitted ${admitted.length}`);

  // Idle for a window: the whole limit at once, and the answer says when the next slot frees.
  now += 1000;
  let last: number[] = [];
  for (let i = 0; i < 10; i++) last = ask();
  t.same(last, [1, 0, 1_000_000]);
  now += 400;
  t.same(ask(), [0, 0, 600_000], 'refused: the oldest admission leaves in 600 ms');
  now += 600;
  t.equal(ask()[0], 1, 'admitted the moment it leaves');
});

t.test('one decision for every rule: refused by one, counted in none', async (t) => {
  let now = 0;
  const store = new MemoryStore(10, () => now);
  const wide = ruleOf('wide', 5, 60_000);
  const narrow = ruleOf('narrow', 1, 1_000);
  t.same(store.decide('s', [wide, narrow], true), [1, 4, 60_000_000, 0, 1_000_000]);
  now = 10;
  t.same(store.decide('s', [wide, narrow], true), [0, 4, 59_990_000, 0, 990_000]);
  t.same(store.decide('s', [wide], false), [1, 4, 59_990_000], 'a look records nothing');
  t.same(store.decide('unknown', [wide], false), [1, 5, 60_000_000]);
  t.equal(store.size, 1, 'a look at an unknown subject keeps nothing');
});

t.test('the largest limit is held in full', async (t) => {
  let now = 0;
  const store = new MemoryStore(1, () => now);
  const rule = ruleOf('big', 10_000, 1000);
  let admitted = 0;
  for (let i = 0; i < 12_000; i++) {
    now = i * 0.05;
    if (store.decide('s', [rule], true)[0] === 1) admitted++;
  }
  t.equal(admitted, 10_000);
  now = 1000;
  t.equal(store.decide('s', [rule], true)[0], 1, 'the first admission left the window');
});
