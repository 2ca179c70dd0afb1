/**
 * One readiness check, as `/readyz` shows it and `gateway_ready` counts it: `true` (ok), `false`
 * (not ready), a string (not ready, and why), `{ degraded }` (ready, the part still serves, but
 * not `ok`: what is wrong), or `{ ok }` (ready, shown with what it is: the audit store it names).
 * A degraded part keeps the gateway ready and its `gateway_ready` at 1.
 */
export type Check = boolean | string | { readonly degraded: string } | { readonly ok: string };

/** Whether `check` lets the gateway take traffic. */
export function checkReady(check: Check): boolean {
  return check === true || typeof check === 'object';
}

/** What `/readyz` says of `check`. */
export function checkText(check: Check): string {
  if (typeof check === 'string') return check;
  if (typeof check === 'object') return 'ok' in check ? check.ok : check.degraded;
  return check ? 'ok' : 'not ready';
}
