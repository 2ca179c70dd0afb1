/**
 * The `Prefer: wait=N` policy: every request gets a deadline, carried as an `AbortSignal` into the
 * body reader and the backend, so that when it fires the work really stops.
 */
import { errors } from '../errors.js';

export interface Deadline {
  /**
   * Aborts with the catalogue's 504 `request timed out` when the deadline fires (never on a bypass),
   * or with `clientGone` when the client goes away before its answer is finished (`abandon`).
   */
  readonly signal: AbortSignal;
  /** What `Preference-Applied` says: `wait=<seconds>` or `wait=-1`. */
  readonly applied: string;
  /** `performance.now()` when it fires; undefined on a bypass. */
  readonly expiresAt: number | undefined;
  /** Aborts the signal because nobody waits for the answer any more (the client is gone). */
  abandon(): void;
  /** Stops the timer; called when the response is finished. */
  dispose(): void;
}

export interface PreferPolicy {
  /** Seconds when no `Prefer` is sent, or `wait=0`. */
  readonly default_wait: number;
  /** The most seconds a client may ask for. */
  readonly max_wait: number;
  /** Whether `wait=-1` removes the deadline. */
  readonly allow_bypass: boolean;
}

const PREFER = /^wait=(-1|[0-9]+)$/;
const NEVER = new AbortController().signal;

/**
 * The signal of a request's deadline: what every body read and backend call is given. It also fires
 * when the client goes away, so that an upstream request nobody waits for is aborted.
 */
export function deadlineOf(ctx: { readonly deadline?: Deadline }): AbortSignal {
  return ctx.deadline?.signal ?? NEVER;
}

/**
 * Whole seconds left before the request's deadline, at least 1 (what an upstream is sent as
 * `Prefer: wait=`); undefined when there is no deadline (a bypass).
 */
export function secondsLeft(ctx: { readonly deadline?: Deadline }): number | undefined {
  const at = ctx.deadline?.expiresAt;
  return at === undefined ? undefined : Math.max(1, Math.ceil((at - performance.now()) / 1000));
}

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

/** The deadline for a request whose `Prefer` header is `header`; throws as `preferredWait` does. */
export function startDeadline(header: string | undefined, policy: PreferPolicy): Deadline {
  const seconds = preferredWait(header, policy);
  const controller = new AbortController();
  const abandon = () => {
    if (!controller.signal.aborted) controller.abort(errors.clientGone());
  };
  if (seconds === -1) {
    return { signal: controller.signal, applied: 'wait=-1', expiresAt: undefined, abandon, dispose() {} };
  }
  const ms = seconds * 1000;
  const expiresAt = performance.now() + ms;
  const timer = setTimeout(() => controller.abort(errors.deadline()), ms);
  return {
    signal: controller.signal,
    applied: `wait=${seconds}`,
    expiresAt,
    abandon,
    dispose: () => clearTimeout(timer),
  };
}
