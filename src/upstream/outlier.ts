/**
 * Passive ejection (contract §5, Envoy's outlier detection): `consecutive_failures` failures in a
 * row eject a target for `base_ejection` × its ejection count, capped at 10×; the count drops by one
 * for each `base_ejection` the target then stays in without being ejected. At most
 * `floor(max_ejected × targets)` are out at once and never all: a target that would exceed that
 * stays in, marked failing. Time is read from the clock it is given, never from a timer, so ejections
 * end by themselves and a test can move time on.
 */

/** Milliseconds on a monotonic clock (`performance.now()` unless a test gives its own). */
export type Clock = () => number;

/** The cap on the ejection count, and so on an ejection's length in `base_ejection`s. */
export const MAX_EJECTION_MULTIPLIER = 10;

export interface OutlierSettings {
  readonly consecutiveFailures: number;
  /** Milliseconds. */
  readonly baseEjection: number;
  /** A fraction of the targets, 0 to 1. */
  readonly maxEjected: number;
}

/** One target's record. */
interface Record {
  /** Failures in a row since its last success or ejection. */
  failures: number;
  /** Its ejection count as it stood when its last ejection ended (decayed when read). */
  ejections: number;
  /** When its current or last ejection ends (`-Infinity`: never ejected). */
  until: number;
}

/** The ejection bookkeeping of a set of `size` targets, each known by its index. */
export class Outlier {
  readonly #settings: OutlierSettings;
  readonly #clock: Clock;
  readonly #records: Record[];
  readonly #most: number;

  constructor(size: number, settings: OutlierSettings, clock: Clock) {
    this.#settings = settings;
    this.#clock = clock;
    this.#records = Array.from({ length: size }, () => ({ failures: 0, ejections: 0, until: -Infinity }));
    // Never all: one target always stays in.
    this.#most = Math.min(Math.floor(settings.maxEjected * size), size - 1);
  }

  /** Whether target `i` is ejected now. */
  ejected(i: number): boolean {
    return this.#clock() < this.#record(i).until;
  }

  /** Whether target `i` is in but has failed `consecutive_failures` times in a row (the cap kept it in). */
  failing(i: number): boolean {
    return !this.ejected(i) && this.#record(i).failures >= this.#settings.consecutiveFailures;
  }

  /** Targets ejected now. */
  ejectedCount(): number {
    const now = this.#clock();
    let count = 0;
    for (const record of this.#records) if (now < record.until) count++;
    return count;
  }

  /** Target `i`'s ejection count now, its decay applied. */
  ejections(i: number): number {
    const record = this.#record(i);
    const now = this.#clock();
    if (now < record.until) return record.ejections;
    const stayed = Math.floor((now - record.until) / this.#settings.baseEjection);
    return Math.max(0, record.ejections - stayed);
  }

  /** Target `i` answered (anything but a failure): its run of failures ends. */
  succeeded(i: number): void {
    const record = this.#record(i);
    if (!this.ejected(i)) record.failures = 0;
  }

  /**
   * Target `i` failed (a connect failure, a reset, a timeout, a 502/503/504). True when this ejects
   * it; a failure of a request that went out before its ejection does not count again.
   */
  failed(i: number): boolean {
    if (this.ejected(i)) return false;
    const record = this.#record(i);
    record.failures++;
    if (record.failures < this.#settings.consecutiveFailures) return false;
    if (this.ejectedCount() >= this.#most) return false;
    const count = Math.min(this.ejections(i) + 1, MAX_EJECTION_MULTIPLIER);
    record.ejections = count;
    record.until = this.#clock() + count * this.#settings.baseEjection;
    // Back in, it starts a new run.
    record.failures = 0;
    return true;
  }

  #record(i: number): Record {
    return this.#records[i] as Record;
  }
}
