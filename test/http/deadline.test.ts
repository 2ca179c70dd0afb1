/**
 * A request's deadline in its two forms: the `AbortSignal` (body reads, the pass-through) and the
 * cheaper `AbortEmitter` an upstream request is given. Both stop together, with the same reason.
 */
import { once } from 'node:events';
import t from 'tap';
import { Deadline, stopOf } from '../../src/http/deadline.js';
import { DeadlineClock } from '../../src/http/deadline-clock.js';

t.test(
  'the emitter fires with the deadline’s 504 when the clock reaches it, and the signal with it',
  async (t) => {
    const deadline = new Deadline(1, new DeadlineClock());
    const { emitter } = deadline;
    t.equal(emitter.aborted, false);
    t.equal(emitter.reason, undefined);
    t.equal(deadline.emitter, emitter, 'made once');
    const { signal } = deadline;
    await once(emitter, 'abort');
    t.equal(emitter.aborted, true);
    t.match(emitter.reason, { status: 504, message: 'request timed out' });
    t.equal(signal.aborted, true, 'the signal stopped too');
    t.equal(signal.reason, emitter.reason, 'with the same reason');
    t.equal(deadline.timedOut, true);
  },
);

t.test('a client gone stops the emitter with its own reason, once', async (t) => {
  const deadline = new Deadline(30, new DeadlineClock());
  const { emitter } = deadline;
  let fired = 0;
  emitter.on('abort', () => fired++);
  deadline.abandon();
  deadline.fire();
  t.equal(fired, 1, 'one abort');
  t.equal(emitter.aborted, true);
  t.match(emitter.reason, { status: 499 });
  t.equal(deadline.timedOut, false);
  deadline.dispose();
});

t.test('an emitter made after the deadline passed is aborted at once', async (t) => {
  const clock = new DeadlineClock();
  const deadline = new Deadline(1, clock);
  await t.resolves(
    new Promise<void>((resolve) => {
      const poll = () =>
        performance.now() >= (deadline.expiresAt as number) ? resolve() : setImmediate(poll);
      poll();
    }),
  );
  const { emitter } = deadline;
  t.equal(emitter.aborted, true);
  t.match(emitter.reason, { status: 504 });
  t.equal(deadline.signal.aborted, true);
});

t.test('a bypass never fires; without a deadline the emitter keeps no listener', async (t) => {
  const bypass = new Deadline(-1, new DeadlineClock());
  t.equal(bypass.emitter.aborted, false);
  bypass.abandon();
  t.equal(bypass.emitter.aborted, true, 'a client gone still stops it');
  const none = stopOf({});
  const listener = () => undefined;
  none.once('abort', listener);
  none.on('abort', listener);
  t.equal(none.listenerCount('abort'), 0, 'nothing held by the shared emitter');
  t.equal(none.aborted, false);
  t.equal(stopOf({}), none);
});
