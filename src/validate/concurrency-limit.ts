/**
 * A bound on how many requests do one memory-hungry step at once. Validating an SSO provider's
 * metadata holds the file several times over while it runs (the chunks read back from disk, the
 * bytes, the text): without a bound, memory grows with the number of concurrent uploads; with one,
 * with the bound. The step is mostly work on the one JavaScript thread, so a small bound costs the
 * uploads next to no throughput. A request waits its turn in arrival order, and stops waiting (with
 * its signal's reason: the deadline's 504, or the client gone) when its signal fires first.
 */

export class ConcurrencyLimit {
  #free: number;
  readonly #waiting: Array<() => void> = [];

  /** A limit letting `size` (at least 1) through at once. */
  constructor(size: number) {
    this.#free = Math.max(1, Math.floor(size));
  }

  /** Runs `step` once a place is free; rejects with `signal`'s reason if it fires while waiting. */
  async run<T>(signal: AbortSignal, step: () => Promise<T>): Promise<T> {
    await this.#enter(signal);
    try {
      return await step();
    } finally {
      this.#leave();
    }
  }

  /** Requests waiting for a place (for tests and the curious). */
  get waiting(): number {
    return this.#waiting.length;
  }

  #enter(signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    if (this.#free > 0) {
      this.#free--;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const admit = () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        const at = this.#waiting.indexOf(admit);
        if (at !== -1) this.#waiting.splice(at, 1);
        reject(signal.reason);
      };
      this.#waiting.push(admit);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Hands the place to the next in line, or frees it. */
  #leave(): void {
    const next = this.#waiting.shift();
    if (next !== undefined) next();
    else this.#free++;
  }
}
