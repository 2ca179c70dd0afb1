/**
 * The `Prefer: wait=N` policy: every request gets a deadline. Its `AbortSignal`, carried into the
 * body reader and the backends so that when it fires the work really stops, is made only when
 * something asks for it (a backend that answers from memory never does), and the app's one
 * `DeadlineClock` (a timer wheel) fires it, instead of a timer per request.
 */
import { EventEmitter } from 'node:events';
import type { AbortEmitter } from '../upstream/stop-signal.js';
import { errors, type GatewayError } from '../errors.js';

export interface PreferPolicy {
  /** Seconds when no `Prefer` is sent, or `wait=0`. */
  readonly default_wait: number;
  /** The most seconds a client may ask for. */
  readonly max_wait: number;
  /** Whether `wait=-1` removes the deadline. */
  readonly allow_bypass: boolean;
}

const PREFER = /^wait=(-1|[0-9]+)$/;

/**
 * The seconds of the deadline `header` asks for under `policy` (undefined when absent), or -1 for a
 * bypass. Throws the catalogue's 400 for a value that does not match `^wait=(-1|[0-9]+)$` or a
 * disabled bypass.
 */
export function preferredWait(header: string | undefined, policy: PreferPolicy): number {
  if (header === undefined) return policy.default_wait;
  const m = PREFER.exec(header);
  if (!m) throw errors.preferInvalid(header);
  if (m[1] === '-1') {
    if (!policy.allow_bypass) throw errors.preferBypassDisabled();
    return -1;
  }
  // wait=0 means the default (never "no deadline"); digits beyond max_wait clamp without overflow.
  const digits = (m[1] as string).replace(/^0+(?=\d)/, '');
  const asked = digits.length > 10 ? Number.POSITIVE_INFINITY : Number(digits);
  return asked === 0 ? policy.default_wait : Math.min(asked, policy.max_wait);
}

/** Milliseconds between the ticks of the clock: a deadline fires at most this late. */
const TICK = 50;

/**
 * The timer wheel of one app instance: deadlines whose signal exists wait in the slot of the tick
 * they fall in, and one interval timer, running only while a slot is filled, fires them.
 */
export class DeadlineClock {
  readonly #slots = new Map<number, Set<Deadline>>();
  #timer: NodeJS.Timeout | undefined;

  /** Fires `deadline` once its time has come. */
  add(deadline: Deadline, at: number): void {
    const slot = Math.ceil(at / TICK);
    let entries = this.#slots.get(slot);
    if (entries === undefined) {
      entries = new Set();
      this.#slots.set(slot, entries);
    }
    entries.add(deadline);
    this.#timer ??= setInterval(() => this.#tick(), TICK);
  }

  /** Forgets `deadline` (its request is over). */
  remove(deadline: Deadline, at: number): void {
    const slot = Math.ceil(at / TICK);
    const entries = this.#slots.get(slot);
    if (entries === undefined) return;
    entries.delete(deadline);
    if (entries.size === 0) this.#forget(slot);
  }

  #tick(): void {
    const now = Math.floor(performance.now() / TICK);
    for (const [slot, entries] of this.#slots) {
      if (slot > now) continue;
      this.#forget(slot);
      for (const deadline of entries) deadline.fire();
    }
  }

  #forget(slot: number): void {
    this.#slots.delete(slot);
    if (this.#slots.size === 0 && this.#timer !== undefined) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }
}

/**
 * `Preference-Applied` of `seconds`; the last value is kept, since most requests get the same wait
 * (the default).
 */
const appliedWait = (() => {
  let last = Number.NaN;
  let text = '';
  return (seconds: number): string => {
    if (seconds !== last) {
      last = seconds;
      text = `wait=${seconds}`;
    }
    return text;
  };
})();

/** One request's deadline (or none, on a bypass). */
export class Deadline {
  /** What `Preference-Applied` says: `wait=<seconds>` or `wait=-1`. */
  readonly applied: string;
  /** `performance.now()` when it fires; undefined on a bypass. */
  readonly expiresAt: number | undefined;
  readonly #clock: DeadlineClock;
  #controller: AbortController | undefined;
  #emitter: DeadlineEmitter | undefined;
  /** Whether the clock has been asked to fire it (a signal or an emitter exists). */
  #watched = false;
  /** Why the work stops: the deadline's 504, or the client gone; undefined while it goes on. */
  #reason: GatewayError | undefined;

  constructor(seconds: number, clock: DeadlineClock) {
    this.#clock = clock;
    this.applied = appliedWait(seconds);
    this.expiresAt = seconds === -1 ? undefined : performance.now() + seconds * 1000;
  }

  /**
   * Aborts with the catalogue's 504 `request timed out` when the deadline fires (never on a bypass),
   * or with `clientGone` when the client goes away before its answer is finished (`abandon`). Made on
   * first access: what every body read and backend call that waits is given.
   */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      this.#watch();
      if (this.#reason !== undefined) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /**
   * The same as `signal`, as an `AbortEmitter` (an `EventEmitter` emitting `abort`): what an
   * upstream request is given, made on first access and much cheaper than an `AbortController`.
   */
  get emitter(): AbortEmitter {
    if (this.#emitter === undefined) {
      this.#emitter = new DeadlineEmitter(this);
      this.#watch();
    }
    return this.#emitter;
  }

  /** Why the work was stopped (the deadline's 504, or the client gone); undefined while it goes on. */
  get stopped(): GatewayError | undefined {
    return this.#reason;
  }

  /** True once the request's own deadline ended it (a 504 of the gateway's, not an upstream's). */
  get timedOut(): boolean {
    return this.#reason?.status === 504;
  }

  /** Throws the deadline's 504 once it has passed (or the reason the work already stopped). */
  check(): void {
    if (this.#reason === undefined && this.#due()) this.fire();
    if (this.#reason !== undefined) throw this.#reason;
  }

  /** Ends the work with the 504 (the clock calls it when the time has come). */
  fire(): void {
    this.#stop(errors.deadline());
  }

  /** Ends the work because nobody waits for the answer any more (the client is gone). */
  abandon(): void {
    this.#stop(errors.clientGone());
  }

  /** Forgets the deadline once the response is finished. */
  dispose(): void {
    if (this.#watched && this.expiresAt !== undefined) this.#clock.remove(this, this.expiresAt);
  }

  /** Once something listens (a signal or an emitter exists): the clock fires the deadline on time. */
  #watch(): void {
    if (this.#watched) return;
    this.#watched = true;
    this.#reason ??= this.#due() ? errors.deadline() : undefined;
    if (this.#reason === undefined && this.expiresAt !== undefined) this.#clock.add(this, this.expiresAt);
  }

  #due(): boolean {
    return this.expiresAt !== undefined && performance.now() >= this.expiresAt;
  }

  #stop(reason: GatewayError): void {
    if (this.#reason !== undefined) return;
    this.#reason = reason;
    this.#controller?.abort(reason);
    this.#emitter?.emit('abort');
  }
}

/** A deadline's `AbortEmitter`: `aborted` and `reason` read the deadline's own state. */
class DeadlineEmitter extends EventEmitter implements AbortEmitter {
  readonly #deadline: Deadline;
  constructor(deadline: Deadline) {
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

/** The deadline for a request whose `Prefer` header is `header`; throws as `preferredWait` does. */
export function startDeadline(
  header: string | undefined,
  policy: PreferPolicy,
  clock: DeadlineClock,
): Deadline {
  return new Deadline(preferredWait(header, policy), clock);
}

const NEVER = new AbortController().signal;

/**
 * The signal of a request's deadline: what every body read and backend call is given. It also fires
 * when the client goes away, so that an upstream request nobody waits for is aborted.
 */
export function deadlineOf(ctx: { readonly deadline?: Deadline }): AbortSignal {
  return ctx.deadline?.signal ?? NEVER;
}

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
const NEVER_EMITTER = new NeverEmitter();

/** The `AbortEmitter` of a request's deadline: `deadlineOf`'s signal in its cheaper form. */
export function stopOf(ctx: { readonly deadline?: Deadline }): AbortEmitter {
  return ctx.deadline?.emitter ?? NEVER_EMITTER;
}
