/**
 * Passive ejection's bookkeeping on a clock the test moves: the length of each ejection, its cap,
 * the decay of the count, `max_ejected` and "never all". (`targets.test.ts` ejects real servers.)
 */
import t from 'tap';
import { Outlier } from '../../src/upstream/outlier.js';

const BASE = 30_000;

function outlier(size: number, maxEjected = 0.5, consecutiveFailures = 3) {
  let now = 1_000;
  const o = new Outlier(size, { consecutiveFailures, baseEjection: BASE, maxEjected }, () => now);
  return {
    o,
    advance: (ms: number) => (now += ms),
    /** Fails target `i` `n` times; whether the last failure ejected it. */
    fail: (i: number, n: number) => {
      let ejected = false;
      for (let k = 0; k < n; k++) ejected = o.failed(i);
      return ejected;
    },
  };
}

t.test('consecutive failures eject; a success in between starts the run again', async (t) => {
  const { o, fail } = outlier(4);
  t.notOk(fail(0, 2));
  o.succeeded(0);
  t.notOk(fail(0, 2), 'the run started again after the success');
  t.ok(fail(0, 1), 'the third failure in a row ejects');
  t.ok(o.ejected(0));
  t.notOk(o.failed(0), 'a failure of a request sent before the ejection does not count again');
  t.equal(o.ejectedCount(), 1);
});

t.test('an ejection lasts base_ejection × its count, capped at 10×, and the count decays', async (t) => {
  const { o, fail, advance } = outlier(2);
  const lengths: number[] = [];
  for (let round = 1; round <= 12; round++) {
    t.ok(fail(0, 3), `ejection ${round}`);
    let ms = 0;
    while (o.ejected(0)) {
      advance(1_000);
      ms += 1_000;
    }
    lengths.push(ms / BASE);
  }
  t.same(lengths, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 10], 'in base_ejections');
  t.equal(o.ejections(0), 10);
  advance(BASE - 1);
  t.equal(o.ejections(0), 10, 'less than one base_ejection in: no decay yet');
  advance(1);
  t.equal(o.ejections(0), 9, 'one base_ejection in: one less');
  advance(3 * BASE);
  t.equal(o.ejections(0), 6);
  t.ok(fail(0, 3));
  advance(7 * BASE - 1);
  t.ok(o.ejected(0), 'the next ejection counts from the decayed count: 7×');
  advance(1);
  t.notOk(o.ejected(0));
  advance(100 * BASE);
  t.equal(o.ejections(0), 0, 'long in: the count is back to 0');
  t.ok(fail(0, 3));
  advance(BASE);
  t.notOk(o.ejected(0), 'a first ejection again');
});

t.test('never more than floor(max_ejected × targets) at once, and never all', async (t) => {
  const five = outlier(5, 0.5);
  t.ok(five.fail(0, 3));
  t.ok(five.fail(1, 3));
  t.notOk(five.fail(2, 3), 'floor(0.5 × 5) = 2 are out already: the third stays in');
  t.ok(five.o.failing(2), 'and is marked failing');
  t.notOk(five.o.ejected(2));
  five.advance(BASE);
  t.ok(five.o.failed(2), 'once the others are back, its next failure ejects it');

  const all = outlier(3, 1);
  t.ok(all.fail(0, 3));
  t.ok(all.fail(1, 3));
  t.notOk(all.fail(2, 3), '100%: never all the same');
  t.equal(all.o.ejectedCount(), 2);

  const one = outlier(1, 1);
  t.notOk(one.fail(0, 30), 'a single target is never ejected');
  t.ok(one.o.failing(0));
  one.o.succeeded(0);
  t.notOk(one.o.failing(0), 'a success ends its failing');

  const none = outlier(4, 0);
  t.notOk(none.fail(0, 3), 'max_ejected 0%: none is ever ejected');
});
