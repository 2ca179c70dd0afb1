/**
 * `last_used_at`, kept off the request path (contract §9): a verified request only adds its token id
 * to a set; a timer writes the set in one guarded UPDATE, which touches a row only when its
 * `last_used_at` is at least `interval` old by the database's clock. So every replica may try, and a
 * token's row is still written at most once per interval across all of them.
 */
import type { Pool } from 'pg';
import type { Logger } from '../observability/logger.js';

const GUARDED_UPDATE = `UPDATE gateway_tokens SET last_used_at = now()
  WHERE id = ANY($1::uuid[]) AND revoked_at IS NULL
    AND (last_used_at IS NULL OR last_used_at <= now() - make_interval(secs => $2))`;

/** Batches uses of store tokens into guarded writes. */
export class UsageWriter {
  readonly #pool: Pool;
  readonly #interval: number;
  readonly #log: Logger;
  /** Ids used since the last write. */
  #used = new Set<string>();
  /** When this process last wrote each id (ms, local clock): no need to try again sooner. */
  readonly #written = new Map<string, number>();
  #failing = false;

  constructor(pool: Pool, interval: number, log: Logger) {
    this.#pool = pool;
    this.#interval = interval;
    this.#log = log;
  }

  /** Records a verified use of token `id`: one set insertion, nothing else. */
  touch(id: string): void {
    this.#used.add(id);
  }

  /** Writes the uses recorded so far in one statement; kept for the next try when it fails. */
  async flush(now = Date.now()): Promise<void> {
    const due = [...this.#used].filter((id) => now - (this.#written.get(id) ?? -Infinity) >= this.#interval);
    this.#used = new Set();
    if (due.length === 0) return;
    try {
      await this.#pool.query(GUARDED_UPDATE, [due, this.#interval / 1000]);
      for (const id of due) this.#written.set(id, now);
      if (this.#failing) this.#log.info('token last_used_at written again');
      this.#failing = false;
    } catch (err) {
      for (const id of due) this.#used.add(id);
      if (!this.#failing) this.#log.warn({ err: (err as Error).message }, 'token last_used_at not written');
      this.#failing = true;
    }
  }
}
