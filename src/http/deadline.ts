/**
 * The `Prefer: wait=N` policy: every request gets a deadline, carried as an `AbortSignal` into the
 * body reader and the backend, so that when it fires the work really stops.
 */
import { errors } from '../errors.js';

export interface Deadline {
  /** Aborts with the catalogue's 504 `request timed out` when the deadline fires; never on a bypass. */
  readonly signal: AbortSignal;
  /** What `Preference-Applied` says: `wait=<seconds>` or `wait=-1`. */
  readonly applied: string;
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

/** The signal of a request's deadline: what every body read and backend call is given. */
export function deadlineOf(ctx: { readonly deadline?: Deadline }): AbortSignal {
  return ctx.deadline?.signal ?? NEVER;
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
  if (seconds === -1) return { signal: NEVER, applied: 'wait=-1', dispose() {} };
  const controller = new AbortController();
  const ms = seconds * 1000;
  const timer = setTimeout(() => controller.abort(errors.deadline()), ms);
  return {
    signal: controller.signal,
    applied: `wait=${seconds}`,
    dispose: () => clearTimeout(timer),
  };
}
