/**
 * One request to an upstream of several targets: a target picked, the request sent by the caller's
 * transport, the outcome fed to passive ejection, and the request sent again to another target
 * where the retry rules, `attempts`, the deadline and the retry budget allow, always before the
 * answer is handed over (so before any byte of it reached the client).
 */
import { performance } from 'node:perf_hooks';
import { errors, GatewayError } from '../errors.js';
import { kindOf } from './endpoint.js';
import { failureStatus, type RetryReason, retryReason } from './retry.js';
import type { Lease, Target, TargetSet } from './targets.js';

/** What the retry rules read of the request. */
export interface Sending {
  readonly method: string;
  /** False for a public request (contract §11): never sent again once any byte of it was written. */
  readonly replayable: boolean;
  /** True when it can go out once only (a body streaming from the client): never sent again at all. */
  readonly once?: boolean;
  /** `performance.now()` at which its deadline fires; undefined when it has none. */
  readonly deadlineAt?: number;
  /** Its stop (deadline or client gone): once fired, nothing is counted or tried again. */
  readonly signal: { readonly aborted: boolean };
}

/** One attempt, as the transport sees it. */
export interface Attempt<T> {
  readonly target: Target<T>;
  /** The transport calls this when it hands the first byte of the request to the target's connection. */
  written(): void;
}

/** What the caller's transport does with an attempt, and how its answer is read. */
export interface Transport<T, R> {
  /** Sends the request to `attempt.target`; rejects when the exchange fails before the answer. */
  send(attempt: Attempt<T>): Promise<R>;
  /** The answer's status. */
  status(answer: R): number;
  /** Throws away an answer that will not be used (a 503 sent again elsewhere). */
  discard(answer: R): void;
  /**
   * Keeps the target counted in flight until the answer is over (a body that streams), calling
   * `end` then; without it the target is released when the answer's head is handed over.
   */
  settle?(answer: R, end: () => void): void;
  /** Told of each retry, with its reason. */
  retried?(reason: RetryReason): void;
}

/** The answer and the target that gave it. */
export interface Answered<T, R> {
  readonly answer: R;
  readonly target: Target<T>;
}

/** Failure kinds that are the target's fault: they count towards its ejection. */
const TARGET_FAULTS = new Set([
  'connect',
  'dns',
  'connect_timeout',
  'reset',
  'headers_timeout',
  'body_timeout',
  'protocol',
  'status',
  'truncated',
]);

/**
 * Sends `request` through `transport` to the targets of `set`. Rejects with the last attempt's
 * error, or at once with 502 `upstream unreachable` when every target is out.
 */
export async function sendToTargets<T, R>(
  set: TargetSet<T>,
  request: Sending,
  transport: Transport<T, R>,
): Promise<Answered<T, R>> {
  let lease = set.pick();
  if (lease === undefined) throw errors.upstreamUnavailable('all_out');
  const { budget } = set;
  budget.requests++;
  const tried = new Set<Target<T>>();
  let retries = 0;
  let budgeted = false;
  /** The next target, when `reason` allows another attempt now; undefined when not. */
  const again = (reason: RetryReason | undefined): Lease<T> | undefined => {
    if (reason === undefined || request.once === true || retries >= set.settings.retries.attempts) return;
    if (request.signal.aborted) return;
    if (request.deadlineAt !== undefined && performance.now() >= request.deadlineAt) return;
    // A request being retried holds one place in the budget until it is over.
    if (!budgeted && !budget.take()) return;
    budgeted = true;
    const next = set.pick(tried);
    if (next === undefined) return;
    retries++;
    transport.retried?.(reason);
    return next;
  };
  const settle = (answer: R, held: Lease<T>) => {
    if (transport.settle === undefined) held.end();
    else transport.settle(answer, held.end);
  };
  try {
    for (;;) {
      const { target } = lease;
      tried.add(target);
      let written = false;
      let answer: R;
      try {
        answer = await transport.send({ target, written: () => (written = true) });
      } catch (err) {
        lease.end();
        if (request.signal.aborted) throw err;
        if (TARGET_FAULTS.has(kindOfFailure(err))) set.failed(target);
        const next = again(retryReason({ method: request.method, written, replayable: request.replayable }));
        if (next === undefined) throw err;
        lease = next;
        continue;
      }
      const status = transport.status(answer);
      if (!failureStatus(status)) {
        set.succeeded(target);
        settle(answer, lease);
        return { answer, target };
      }
      set.failed(target);
      // Released before the next pick: a trial still counted in flight would block it.
      lease.end();
      const next = again(
        retryReason({ method: request.method, written, replayable: request.replayable, status }),
      );
      if (next === undefined) return { answer, target };
      transport.discard(answer);
      lease = next;
    }
  } finally {
    budget.requests--;
    if (budgeted) budget.give();
  }
}

/** The kind of an attempt's failure: a catalogue error's reason, else undici's or Node's error's kind. */
function kindOfFailure(err: unknown): string {
  return err instanceof GatewayError ? (err.reason ?? 'other') : kindOf(err);
}
