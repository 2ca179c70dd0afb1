/** Waiting for an event without a fixed sleep: poll a condition until it holds. */

/**
 * Resolves once `check` holds, trying again every `every` ms. Unbounded on purpose: the test's own
 * timeout bounds it, so a slow machine makes the test slower, never flaky.
 */
export async function until(check: () => boolean | Promise<boolean>, every = 10): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, every));
}
