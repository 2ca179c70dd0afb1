/**
 * What a part of the gateway reports to a gauge that is read when scraped: each part that has
 * something to say (a database pool, a configuration's token registry, the readiness of the
 * configuration serving) adds its reader and deletes it when it closes.
 */

/** The readers of one scrape-time value. */
export class Reported<T> {
  readonly #readers = new Set<() => T>();

  /** Adds `read`, asked at every scrape until it is deleted. */
  add(read: () => T): void {
    this.#readers.add(read);
  }

  delete(read: () => T): void {
    this.#readers.delete(read);
  }

  /** What every reader says now. */
  all(): T[] {
    return [...this.#readers].map((read) => read());
  }

  /** What the newest reader says now (the configuration serving); undefined with none. */
  newest(): T | undefined {
    let last: (() => T) | undefined;
    for (const read of this.#readers) last = read;
    return last?.();
  }
}
