/**
 * How current the token store's held tokens are (contract §9). They are current from a full read
 * made while nothing failed until the next failure (a read, a probe, the LISTEN connection lost);
 * then they are stale since the last successful read, until a full read begun after that failure
 * succeeds. A probe still unanswered after `late` ms makes them stale too: a database that stops
 * answering does not fail a statement for as long as the statement timeout.
 */
import { performance } from 'node:perf_hooks';

/** The store's freshness; instants in Unix milliseconds. */
export class Freshness {
  readonly #late: number;
  /** The instant the last successful read began. */
  #lastRead = Date.now();
  /** The instant of the last failure not yet followed by a full read; undefined while current. */
  #failedAt: number | undefined;
  /** When the probe in flight began (monotonic ms). */
  #probing: number | undefined;

  constructor(late: number) {
    this.#late = late;
  }

  /** True while no failure waits for a full read. */
  get current(): boolean {
    return this.#failedAt === undefined;
  }

  /** A read begun at `startedAt` succeeded; a full one (`all`) makes the store current again. */
  read(startedAt: number, all: boolean): void {
    if (all && this.#failedAt !== undefined && startedAt >= this.#failedAt) this.#failedAt = undefined;
    if (this.#failedAt === undefined) this.#lastRead = Math.max(this.#lastRead, startedAt);
  }

  /** A read or probe failed, or the LISTEN connection was lost: changes may be missed from now. */
  failed(): void {
    this.#failedAt = Date.now();
  }

  /** Runs `probe` unless one is in flight; its success is a read (not a full one), its failure a failure. */
  async probe(probe: () => Promise<unknown>): Promise<void> {
    if (this.#probing !== undefined) return;
    this.#probing = performance.now();
    const startedAt = Date.now();
    try {
      await probe();
      this.read(startedAt, false);
    } catch (err) {
      this.failed();
      throw err;
    } finally {
      this.#probing = undefined;
    }
  }

  /** The instant of the last successful read while the store is not current; undefined while it is. */
  staleSince(): number | undefined {
    const late = this.#probing !== undefined && performance.now() - this.#probing > this.#late;
    return this.#failedAt !== undefined || late ? this.#lastRead : undefined;
  }
}
