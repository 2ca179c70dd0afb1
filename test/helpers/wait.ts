/** Waiting for an event without a fixed sleep: poll a condition, for a bounded time. */

/**
 * How long `until` waits unless told otherwise: ample for a loaded 2-core machine, and far below tap's
 * per-file timeout, so a regression fails here with its name rather than as a silent file timeout.
 */
export const UNTIL_TIMEOUT_MS = 30_000;

/**
 * Resolves once `check` holds, trying again every `everyMs`; rejects with an error naming `what` once
 * `timeoutMs` have passed. Resolves with the milliseconds it took.
 */
export async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = UNTIL_TIMEOUT_MS,
  everyMs = 10,
): Promise<number> {
  const start = performance.now();
  while (!(await check())) {
    const waited = performance.now() - start;
    if (waited > timeoutMs) throw new Error(`timed out after ${Math.round(waited)} ms waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  return performance.now() - start;
}
