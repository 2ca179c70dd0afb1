/** Calling a backend directly, as an operation does: a `BackendCall` for a signal. */
import type { BackendCall } from '../../src/backends/backend-call.js';
import { type ForwardedRequest, neutralRequest } from '../../src/upstream/forwarded.js';

/** A call under `signal` (never aborted by default), forwarding `request` (a neutral GET by default). */
export function callOf(
  signal: AbortSignal = new AbortController().signal,
  request: ForwardedRequest = neutralRequest('GET', '/'),
): BackendCall {
  return { signal, stop: signal, request };
}
