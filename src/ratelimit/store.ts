/**
 * The seam between the rate-limit stages and where the counts live (`memory`, `redis`): one
 * method that makes one decision for one subject under every rule that applies, atomically.
 */

/** One limit as a store applies it. */
export interface LimitRule {
  /**
   * `<name>:<limit>:<window seconds>`: what the counts are kept under, so that a policy changed by a
   * reload starts from zero and an unchanged one keeps its counts.
   */
  readonly id: string;
  readonly limit: number;
  /** Whole seconds, in milliseconds. */
  readonly windowMs: number;
}

/**
 * A decision: `[admitted (1 or 0), then for each rule in order: requests remaining, microseconds
 * until the admission whose leaving frees a slot leaves the window]`. A flat list, as a Lua script
 * answers it.
 */
export type Reply = number[];

/** Where the counts live. */
export interface RateLimitStore {
  /**
   * Decides for `subject` (a principal, or a client address group) under every one of `rules`: the
   * request is admitted only when each has room, and then (with `record`) counted in each; a
   * refused request counts in none. `undefined` when the store could not decide (unreachable,
   * slow): the caller applies `on_error`.
   */
  decide(
    subject: string,
    rules: readonly LimitRule[],
    record: boolean,
  ): Reply | undefined | Promise<Reply | undefined>;
  /** For `/readyz`: true, or why not. */
  check(): true | string;
  close(): Promise<void>;
}

/** The rule id of a policy (see `LimitRule.id`). */
export function ruleOf(name: string, limit: number, windowMs: number): LimitRule {
  return { id: `${name}:${limit}:${windowMs / 1000}`, limit, windowMs };
}
