/**
 * At most 60 refusals recorded per identity in any minute (a sliding log), so that a client hammering
 * a forbidden route cannot flood the trail; the rest are counted as dropped.
 */
import { LRUCache } from 'lru-cache';

const LIMIT = 60;
const WINDOW_MS = 60_000;
/** Identities tracked at once; the least recently refused are forgotten first. */
const MAX_IDENTITIES = 10_000;

export class RefusalLimiter {
  readonly #times = new LRUCache<string, number[]>({ max: MAX_IDENTITIES });
  readonly #now: () => number;

  constructor(now: () => number) {
    this.#now = now;
  }

  /** True when a refusal of `principal` may be recorded now (and counts it). */
  admit(principal: string): boolean {
    const now = this.#now();
    const times = this.#times.get(principal) ?? [];
    while (times.length > 0 && (times[0] as number) <= now - WINDOW_MS) times.shift();
    if (times.length >= LIMIT) return false;
    times.push(now);
    this.#times.set(principal, times);
    return true;
  }
}
