/**
 * A deadline's stop in its cheaper form: an `AbortEmitter` (an `EventEmitter` that emits `abort`)
 * reading the deadline's own state, and the stops that never fire, for a request without a deadline.
 */
import { EventEmitter } from 'node:events';
import type { AbortEmitter } from '../upstream/stop-signal.js';

/** What the emitter reads: why the deadline's work stopped (undefined while it goes on). */
interface Stoppable {
  readonly stopped: unknown;
}

/** A deadline's `AbortEmitter`: `aborted` and `reason` read the deadline's own state. */
export class DeadlineEmitter extends EventEmitter implements AbortEmitter {
  readonly #deadline: Stoppable;
  constructor(deadline: Stoppable) {
    super();
    this.#deadline = deadline;
  }
  get aborted(): boolean {
    return this.#deadline.stopped !== undefined;
  }
  get reason(): unknown {
    return this.#deadline.stopped;
  }
}

/** A signal that never fires: the stop of a request that has no deadline (yet). */
export const NEVER_SIGNAL: AbortSignal = new AbortController().signal;

/** An emitter that never fires: the stop of a request that has no deadline (yet). Nothing is kept. */
class NeverEmitter extends EventEmitter implements AbortEmitter {
  readonly aborted = false;
  readonly reason = undefined;
  override on(): this {
    return this;
  }
  override once(): this {
    return this;
  }
}
export const NEVER_EMITTER: AbortEmitter = new NeverEmitter();
