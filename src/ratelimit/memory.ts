/**
 * The `memory` store: the exact sliding log in this process. Each subject (an identity, an address
 * group) holds, per rule, a ring of the monotonic times of its admissions in the window; subjects
 * are kept in an LRU cache bounded by `max_keys` (the least recently used dropped). Kept by the app
 * across reloads, so a reload keeps the counts of every rule whose id is unchanged.
 */
import { performance } from 'node:perf_hooks';
import { LRUCache } from 'lru-cache';
import type { LimitRule, RateLimitStore, Reply } from './store.js';

/** The first capacity of a ring; it doubles up to the rule's limit as it fills. */
const FIRST_CAPACITY = 8;

/** Admission times (ms, monotonic) of one subject under one rule, oldest first. */
class Ring {
  times: Float64Array;
  head = 0;
  count = 0;

  constructor(capacity: number) {
    this.times = new Float64Array(capacity);
  }

  /** Drops the admissions at or before `edge` (they left the window). */
  trim(edge: number): void {
    const { times } = this;
    while (this.count > 0 && (times[this.head] as number) <= edge) {
      this.head = this.head + 1 === times.length ? 0 : this.head + 1;
      this.count--;
    }
  }

  /** The `i`-th admission in the window, oldest first. */
  at(i: number): number {
    return this.times[(this.head + i) % this.times.length] as number;
  }

  push(time: number, limit: number): void {
    if (this.count === this.times.length) this.grow(Math.min(limit, this.times.length * 2));
    this.times[(this.head + this.count) % this.times.length] = time;
    this.count++;
  }

  private grow(capacity: number): void {
    const next = new Float64Array(capacity);
    for (let i = 0; i < this.count; i++) next[i] = this.at(i);
    this.times = next;
    this.head = 0;
  }
}

/** A subject's rings, by rule id. */
type Rings = Map<string, Ring>;

/** The memory store; `now` (ms, monotonic) is injected by tests. */
export class MemoryStore implements RateLimitStore {
  #subjects: LRUCache<string, Rings>;
  readonly #now: () => number;

  constructor(maxKeys: number, now: () => number = () => performance.now()) {
    this.#subjects = new LRUCache({ max: maxKeys });
    this.#now = now;
  }

  /** Keys held now (at most `max_keys`). */
  get size(): number {
    return this.#subjects.size;
  }

  /** Bounds the store by `maxKeys` from now on, keeping the most recently used subjects. */
  resize(maxKeys: number): void {
    if (maxKeys === this.#subjects.max) return;
    const next = new LRUCache<string, Rings>({ max: maxKeys });
    // `entries()` walks the most recent first: set them oldest first so recency is kept.
    const kept = [...this.#subjects.entries()].slice(0, maxKeys).reverse();
    for (const [subject, rings] of kept) next.set(subject, rings);
    this.#subjects = next;
  }

  decide(subject: string, rules: readonly LimitRule[], record: boolean): Reply {
    const now = this.#now();
    const reply: Reply = new Array<number>(1 + 2 * rules.length);
    reply[0] = 1;
    let rings = this.#subjects.get(subject);
    if (rings === undefined) {
      // A look that records nothing (the address check before authentication) keeps nothing.
      if (!record) return untouched(reply, rules);
      rings = new Map();
      this.#subjects.set(subject, rings);
    }
    for (const rule of rules) {
      const ring = rings.get(rule.id);
      if (ring === undefined) continue;
      ring.trim(now - rule.windowMs);
      if (ring.count >= rule.limit) reply[0] = 0;
    }
    if (record && reply[0] === 1) {
      for (const rule of rules) {
        let ring = rings.get(rule.id);
        if (ring === undefined) {
          ring = new Ring(Math.min(rule.limit, FIRST_CAPACITY));
          rings.set(rule.id, ring);
        }
        ring.push(now, rule.limit);
      }
    }
    for (let i = 0; i < rules.length; i++) {
      const rule = rules[i] as LimitRule;
      const ring = rings.get(rule.id);
      const count = ring?.count ?? 0;
      reply[1 + 2 * i] = Math.max(0, rule.limit - count);
      // The admission whose leaving frees a slot: the oldest, or the one past the limit's reach.
      const reset =
        ring === undefined || count === 0
          ? rule.windowMs
          : ring.at(Math.max(0, count - rule.limit)) + rule.windowMs - now;
      reply[2 + 2 * i] = Math.round(reset * 1000);
    }
    return reply;
  }

  check(): true {
    return true;
  }

  async close(): Promise<void> {
    // Kept across reloads: the counts outlive a configuration.
  }
}

/** The reply for a subject with no admissions at all. */
function untouched(reply: Reply, rules: readonly LimitRule[]): Reply {
  for (let i = 0; i < rules.length; i++) {
    const rule = rules[i] as LimitRule;
    reply[1 + 2 * i] = rule.limit;
    reply[2 + 2 * i] = rule.windowMs * 1000;
  }
  return reply;
}
