/**
 * A request's deadline: every request gets one (its `Prefer`, see `prefer.ts`). Its `AbortSignal`,
 * carried into the body reader and the backends so that when it fires the work really stops, is
 * made only when something asks for it (a backend that answers from memory never does), and the
 * app's one `DeadlineClock` fires it.
 */
import { errors, type GatewayError } from '../errors.js';
import type { AbortEmitter } from '../upstream/stop-signal.js';
import type { DeadlineClock } from './deadline-clock.js';
import { DeadlineEmitter, NEVER_EMITTER, NEVER_SIGNAL } from './deadline-signals.js';
import { appliedWait, type PreferPolicy, preferredWait } from './prefer.js';

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

/** The deadline for a request whose `Prefer` header is `header`; throws as `preferredWait` does. */
export function startDeadline(
  header: string | undefined,
  policy: PreferPolicy,
  clock: DeadlineClock,
): Deadline {
  return new Deadline(preferredWait(header, policy), clock);
}

/**
 * The signal of a request's deadline: what every body read and backend call is given. It also fires
 * when the client goes away, so that an upstream request nobody waits for is aborted.
 */
export function deadlineOf(ctx: { readonly deadline?: Deadline }): AbortSignal {
  return ctx.deadline?.signal ?? NEVER_SIGNAL;
}

/** The `AbortEmitter` of a request's deadline: `deadlineOf`'s signal in its cheaper form. */
export function stopOf(ctx: { readonly deadline?: Deadline }): AbortEmitter {
  return ctx.deadline?.emitter ?? NEVER_EMITTER;
}
