/**
 * When a request goes again to another target (contract §5, §11): a request of which no byte was
 * written, whatever its method; a `GET` or `HEAD` that failed or got a 502/503/504 once written,
 * unless it is a public request (a one-time code must not be replayed); nothing else (a `PATCH`
 * whose bytes reached a target is the target's). Always within `attempts`, the request's deadline
 * and Envoy's retry budget. undici's `RetryHandler` retries by method and status on the same
 * dispatcher with back-off and knows no budget, so the rules are written here.
 */

import type { RetryReason } from '../observability/target-metrics.js';

export type { RetryReason } from '../observability/target-metrics.js';

/** Statuses that count as a target's failure (and that a `GET` or `HEAD` is retried on). */
export function failureStatus(status: number): boolean {
  return status === 502 || status === 503 || status === 504;
}

/** How one attempt ended, as the retry rules read it. */
export interface AttemptEnd {
  readonly method: string;
  /** Whether any byte of the request was written to the target's connection. */
  readonly written: boolean;
  /** False for a public request: once written, it is never sent again. */
  readonly replayable: boolean;
  /** The status answered; undefined when the exchange failed instead. */
  readonly status?: number;
}

/** The reason `end` may go to another target, or undefined when it may not (budget and deadline apart). */
export function retryReason(end: AttemptEnd): RetryReason | undefined {
  if (end.status !== undefined) {
    return failureStatus(end.status) && end.replayable && safe(end.method) ? 'status' : undefined;
  }
  if (!end.written) return 'not_sent';
  return end.replayable && safe(end.method) ? 'failure' : undefined;
}

function safe(method: string): boolean {
  return method === 'GET' || method === 'HEAD';
}

/**
 * Envoy's retry budget with its minimum concurrency of 3: a retry may start while the retries in
 * flight, this one counted, are at most `max(3, floor(budget × requests in flight))`. One per backend.
 */
export class RetryBudget {
  /** Requests in flight (each once, however many targets it tried). */
  requests = 0;
  /** Retries in flight. */
  retries = 0;

  constructor(readonly budget: number) {}

  /** Takes a place for one retry; false when the budget is spent. */
  take(): boolean {
    if (this.retries + 1 > Math.max(3, Math.floor(this.budget * this.requests))) return false;
    this.retries++;
    return true;
  }

  /** Gives back a place `take` gave. */
  give(): void {
    this.retries--;
  }
}
