/**
 * The `Prefer: wait=N` policy: every request gets a deadline, carried as an `AbortSignal` into the
 * body reader and the backend, so that when it fires the work really stops.
 */
import type { ServerResponse } from 'node:http';
import { errors } from '../errors.js';

export interface Deadline {
  /** Aborts with the catalogue's 504 `request timed out` when the deadline fires; never on a bypass. */
  readonly signal: AbortSignal;
  /** What `Preference-Applied` says: `wait=<seconds>` or `wait=-1`. */
  readonly applied: string;
  /** `performance.now()` when it fires; undefined on a bypass. */
  readonly expiresAt: number | undefined;
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

/** Milliseconds between the two interim answers that tell a gone client from a half-closed one. */
const PROBE_GAP = 20;
const PREFER = /^wait=(-1|[0-9]+)$/;
const NEVER = new AbortController().signal;

/** The signal of a request's deadline: what every body read and backend call is given. */
export function deadlineOf(ctx: { readonly deadline?: Deadline }): AbortSignal {
  return ctx.deadline?.signal ?? NEVER;
}

/**
 * The signal a backend call is given: it fires with the deadline's 504, or when the client goes away
 * before its answer is finished, so that an upstream request nobody waits for is aborted.
 *
 * A client's FIN is ambiguous: it may have gone, or only half-closed after its request (allowed, and
 * answered). So on a FIN with the answer pending, an interim `102 Processing` is written: a client
 * that is gone answers it with a reset, so a second one fails and closes the response; a half-closed
 * one ignores them (1xx answers are informational) and still gets its answer.
 */
export function requestSignal(ctx: {
  readonly deadline?: Deadline;
  readonly res: ServerResponse;
}): AbortSignal {
  const deadline = deadlineOf(ctx);
  const controller = new AbortController();
  if (deadline.aborted) {
    controller.abort(deadline.reason);
    return controller.signal;
  }
  const { res } = ctx;
  const onDeadline = () => controller.abort(deadline.reason);
  const probe = () => {
    if (!res.headersSent && res.writable) res.writeProcessing();
  };
  // The reset of a gone client arrives after the first write; the second one then fails and closes.
  const onEnd = () => {
    probe();
    setTimeout(probe, PROBE_GAP).unref();
  };
  deadline.addEventListener('abort', onDeadline, { once: true });
  res.socket?.once('end', onEnd);
  res.once('close', () => {
    deadline.removeEventListener('abort', onDeadline);
    res.socket?.off('end', onEnd);
    if (!res.writableFinished) controller.abort(errors.clientGone());
  });
  return controller.signal;
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
  if (seconds === -1) return { signal: NEVER, applied: 'wait=-1', expiresAt: undefined, dispose() {} };
  const controller = new AbortController();
  const ms = seconds * 1000;
  const expiresAt = performance.now() + ms;
  const timer = setTimeout(() => controller.abort(errors.deadline()), ms);
  return {
    signal: controller.signal,
    applied: `wait=${seconds}`,
    expiresAt,
    dispose: () => clearTimeout(timer),
  };
}
