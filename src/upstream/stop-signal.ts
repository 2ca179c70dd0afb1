/**
 * What stops an upstream request: an `AbortSignal`, or the cheaper `AbortEmitter` a request's
 * deadline hands out. Here, at the lowest layer that waits on it, so that the deadline (`http/`),
 * the backend call (`backends/`) and the upstream client all name the one type.
 */
import type { EventEmitter } from 'node:events';

/**
 * An abort signal as an `EventEmitter` that emits `abort` once, with `aborted` and `reason` as an
 * `AbortSignal` has them (the form undici's `signal` options take too): far cheaper to make than an
 * `AbortController`, of which every request to an upstream would otherwise make one, with its
 * event-target listeners.
 */
export interface AbortEmitter extends EventEmitter {
  readonly aborted: boolean;
  readonly reason: unknown;
}

/** What stops a call to an upstream: an `AbortSignal`, or the cheaper `AbortEmitter`. */
export type StopSignal = AbortSignal | AbortEmitter;
