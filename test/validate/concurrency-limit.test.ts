import t from 'tap';
import { ConcurrencyLimit } from '../../src/validate/concurrency-limit.js';

/** A step that runs until `finish` is called, and says when it started. */
function held() {
  let finish!: () => void;
  let started = false;
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  return {
    step: async () => {
      started = true;
      await done;
      return 'ran';
    },
    finish,
    started: () => started,
  };
}

const open = () => new AbortController().signal;

t.test('lets `size` steps through at once; the next waits until one ends, in arrival order', async (t) => {
  const limit = new ConcurrencyLimit(2);
  const [a, b, c, d] = [held(), held(), held(), held()];
  const runs = [a, b, c, d].map((s) => limit.run(open(), s.step));
  await Promise.resolve();
  t.ok(a.started() && b.started(), 'the first two run');
  t.notOk(c.started() || d.started(), 'the others wait');
  t.equal(limit.waiting, 2);
  b.finish();
  t.equal(await runs[1], 'ran', 'a step resolves with what it returns');
  t.ok(c.started(), 'the first in line goes when a place frees');
  t.notOk(d.started(), 'the second in line still waits');
  a.finish();
  await runs[0];
  t.ok(d.started());
  c.finish();
  d.finish();
  t.same(await Promise.all(runs), ['ran', 'ran', 'ran', 'ran']);
  t.equal(limit.waiting, 0);
});

t.test('a step that fails frees its place and rejects with its error', async (t) => {
  const limit = new ConcurrencyLimit(1);
  const failing = limit.run(open(), () => Promise.reject(new Error('broken form')));
  const next = held();
  const after = limit.run(open(), next.step);
  await t.rejects(failing, { message: 'broken form' });
  await new Promise((resolve) => setImmediate(resolve));
  t.ok(next.started(), 'the next step got the place');
  next.finish();
  t.equal(await after, 'ran');
});

t.test(
  'a request whose signal fires while it waits stops waiting, with the reason, and takes no place',
  async (t) => {
    const limit = new ConcurrencyLimit(1);
    const first = held();
    const running = limit.run(open(), first.step);
    const deadline = new AbortController();
    const second = held();
    const waiting = limit.run(deadline.signal, second.step);
    const third = held();
    const later = limit.run(open(), third.step);
    t.equal(limit.waiting, 2);
    const reason = new Error('request timed out');
    deadline.abort(reason);
    await t.rejects(waiting, reason, 'rejected at once with the signal reason');
    t.equal(limit.waiting, 1, 'out of the line');
    first.finish();
    await running;
    await new Promise((resolve) => setImmediate(resolve));
    t.notOk(second.started(), 'the abandoned step never runs');
    t.ok(third.started(), 'the place went to the next one still waiting');
    third.finish();
    t.equal(await later, 'ran');
  },
);

t.test('a signal that already fired is refused before taking a place', async (t) => {
  const limit = new ConcurrencyLimit(1);
  const gone = new AbortController();
  gone.abort(new Error('client gone'));
  const step = held();
  await t.rejects(limit.run(gone.signal, step.step), { message: 'client gone' });
  t.notOk(step.started());
  const next = held();
  const run = limit.run(open(), next.step);
  await Promise.resolve();
  t.ok(next.started(), 'the place is still free');
  next.finish();
  await run;
});

t.test('a size below one still lets one through', async (t) => {
  const limit = new ConcurrencyLimit(0);
  t.equal(await limit.run(open(), async () => 'ran'), 'ran');
});
