/**
 * The token store (contract §9): signed-request tokens read from PostgreSQL into memory, so that
 * verification never queries the database. It learns of every change through `LISTEN` on the
 * channel the table's trigger notifies (only `{op, id}`: it then reads that row), re-reads everything
 * every `poll` as a safety net, and after a lost connection reconnects with back-off and re-reads
 * everything. While the database is away the tokens already held keep working.
 */
import type pg from 'pg';
import { canonicalTokenId } from '../signing/token-id.js';
import { poolSettings } from '../postgres/connection.js';
import { pgDriver } from '../postgres/driver.js';
import { checkSchema, migrate, type Schema } from '../postgres/migrations.js';
import type { TokenStoreConfig } from '../config/token-store.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { Freshness } from './freshness.js';
import { HeldTokens, RowReader, type StoreToken } from './rows.js';
import { TOKEN_COLUMNS, type TokenRow, TOKENS_SCHEMA_SQL } from './schema.js';
import { Keyring } from './seal.js';
import { UsageWriter } from './usage.js';

export type { StoreToken } from './rows.js';

/** What the token registry reads of the store. */
export interface TokenStore {
  /** True once every token has been read once (then for good: the held tokens keep working). */
  ready(): boolean;
  /**
   * When the store cannot be reached (once loaded): the instant of its last successful read, Unix
   * ms; undefined while the held tokens are current.
   */
  staleSince(): number | undefined;
  /** The tokens held now, by canonical id. */
  tokens(): ReadonlyMap<string, StoreToken>;
  /** Calls `listener` with the ids whose token changed, appeared or went; returns an unsubscribe. */
  subscribe(listener: (ids: readonly string[]) => void): () => void;
  /** Records a verified use of store token `id` (written later, in a batch). */
  touch(id: string): void;
  /** True when `config` is the configuration this store was opened with (a reload may keep it). */
  matches(config: TokenStoreConfig): boolean;
  /** Another holder of this store: it closes once every holder has closed it. */
  retain(): TokenStore;
  close(): Promise<void>;
}

export interface TokenStoreDeps {
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** The gateway's whole schema, which `migrate: true` brings in place (its owners sit above). */
  readonly schema: Schema;
}

/** Bound of one statement, client side, so that no read or write of the store ever hangs. */
const QUERY_TIMEOUT = 10_000;
const BACKOFF_FIRST = 100;
const BACKOFF_MAX = 5_000;
/** How long a stop waits for the last uses to be written. */
const CLOSE_FLUSH = 1_000;
/** The longest a lost database goes unnoticed by `/readyz` (or `poll`, when sooner). */
const NOTICE_WITHIN = 2_000;
/** A read of the table itself: the database answers, and this user may still read the tokens. */
const PROBE = 'SELECT 1 FROM gateway_tokens LIMIT 1';

/** Opens the store; it connects and loads in the background (see `ready()`). */
export function openTokenStore(config: TokenStoreConfig, deps: TokenStoreDeps): TokenStore {
  const log = deps.logger.child({ component: 'token_store' });
  const { metrics } = deps;
  const reader = new RowReader(new Keyring(config.encryption_key, config.previous_encryption_keys));
  const connection = { url: config.url, connectTimeout: config.connect_timeout };
  const pool = new (pgDriver().Pool)({
    ...poolSettings({ ...connection, role: 'tokens' }),
    query_timeout: QUERY_TIMEOUT,
    max: 2,
  });
  // An idle connection that dies (terminated, the server restarted) is dropped by the pool.
  pool.on('error', (err) => log.debug({ err: err.message }, 'token store connection closed'));
  pool.on('connect', (client) => client.on('error', () => undefined));
  const usage = new UsageWriter(pool, config.last_used_interval, log);

  const held = new HeldTokens(reader, log);
  let loaded = false;
  let closed = false;
  let holders = 1;
  let channel: string | undefined;
  let listener: pg.Client | undefined;
  let connecting: Promise<void> | undefined;
  let retry: NodeJS.Timeout | undefined;
  let backoff = BACKOFF_FIRST;
  let lastProblem: string | undefined;
  // Probed four times per notice period: a refusal shows at the next probe, a silence once a probe
  // has waited two periods (so a slow answer on a busy host is not taken for a lost database).
  const every = Math.min(config.poll, NOTICE_WITHIN) / 4;
  const freshness = new Freshness(2 * every);
  const staleSince = () => (loaded ? freshness.staleSince() : undefined);
  metrics.tokenStores.add(staleSince);

  const problem = (err: unknown, what: string) => {
    const message = (err as Error).message;
    if (message !== lastProblem) log.error({ err: message }, what);
    lastProblem = message;
  };

  /** Takes rows (all of them, or those of `ids`) as what the store holds, and counts the read. */
  const apply = (rows: TokenRow[], ids: readonly string[] | 'all') => {
    metrics.tokenStoreReloads.inc({ result: held.apply(rows, ids) > 0 ? 'error' : 'ok' });
  };

  const loadAll = async () => {
    const startedAt = Date.now();
    const { rows } = await pool.query<TokenRow>(`SELECT ${TOKEN_COLUMNS} FROM gateway_tokens`);
    apply(rows, 'all');
    freshness.read(startedAt, true);
    lastProblem = undefined;
    if (!loaded) log.info({ tokens: held.tokens.size }, 'token store loaded');
    loaded = true;
  };

  const loadSome = async (ids: string[]) => {
    const startedAt = Date.now();
    const { rows } = await pool.query<TokenRow & { lag: number }>(
      `SELECT ${TOKEN_COLUMNS}, extract(epoch FROM clock_timestamp() - changed_at)::float8 AS lag
         FROM gateway_tokens WHERE id = ANY($1::uuid[])`,
      [ids],
    );
    apply(rows, ids);
    freshness.read(startedAt, false);
    for (const row of rows) metrics.tokenStoreNotifyLag.observe(Math.max(0, row.lag));
  };

  // One load at a time, in order: a row read after a notification is never overwritten by an
  // older full read. Ids notified meanwhile wait for the next turn.
  const pending = new Set<string>();
  let everything = false;
  let syncing: Promise<void> | undefined;
  const sync = (): Promise<void> =>
    (syncing ??= (async () => {
      try {
        while (!closed && (everything || pending.size > 0)) {
          const all = everything;
          const ids = [...pending];
          everything = false;
          pending.clear();
          try {
            await (all ? loadAll() : loadSome(ids));
          } catch (err) {
            metrics.tokenStoreReloads.inc({ result: 'error' });
            freshness.failed();
            problem(err, 'token store unavailable; the tokens held keep working');
            everything = true;
            schedule();
            return;
          }
        }
      } finally {
        syncing = undefined;
      }
    })());
  const reloadAll = () => {
    everything = true;
    return sync();
  };

  const onNotification = (msg: pg.Notification) => {
    let op: unknown;
    let id: string | undefined;
    try {
      const payload = JSON.parse(msg.payload ?? '') as { op?: unknown; id?: unknown };
      op = payload.op;
      if (typeof payload.id === 'string') id = canonicalTokenId(payload.id);
    } catch {
      // Not ours to read: re-read everything rather than miss a change.
    }
    log.debug({ op, token_id: id }, 'token store notification');
    if (id === undefined) everything = true;
    else pending.add(id);
    void sync();
  };

  const lose = (client: pg.Client, err?: Error) => {
    if (listener !== client) return;
    listener = undefined;
    freshness.failed();
    client.end().catch(() => undefined);
    if (closed) return;
    log.warn({ err: err?.message }, 'token store connection lost; reconnecting');
    schedule();
  };

  /** Schema in place, `LISTEN` on the table's channel, then everything read (nothing missed between). */
  const connect = async () => {
    if (closed || listener) return;
    const client = new (pgDriver().Client)({
      ...poolSettings({ ...connection, role: 'tokens listen' }),
      query_timeout: QUERY_TIMEOUT,
    });
    try {
      if (channel === undefined) {
        const setup = await pool.connect();
        let failed: Error | undefined;
        try {
          if (config.migrate) {
            const applied = await migrate(setup, deps.schema);
            if (applied.length > 0) log.info({ versions: applied }, 'database migrated');
          } else {
            await checkSchema(setup, deps.schema);
          }
          const { rows } = await setup.query<{ schema: string }>(TOKENS_SCHEMA_SQL);
          channel = (rows[0] as { schema: string }).schema;
        } catch (err) {
          failed = err as Error;
          throw err;
        } finally {
          setup.release(failed);
        }
      }
      client.on('error', (err) => lose(client, err));
      client.on('end', () => lose(client));
      client.on('notification', (msg) => {
        if (listener === client && msg.channel === channel) onNotification(msg);
      });
      listener = client;
      await client.connect();
      await client.query(`LISTEN ${client.escapeIdentifier(channel)}`);
      if (closed) return void client.end().catch(() => undefined);
      log.info({ channel }, loaded ? 'token store listening again' : 'token store listening');
      backoff = BACKOFF_FIRST;
      await reloadAll();
    } catch (err) {
      if (listener === client) listener = undefined;
      client.end().catch(() => undefined);
      freshness.failed();
      metrics.tokenStoreReloads.inc({ result: 'error' });
      problem(err, 'token store unavailable; the tokens held keep working');
      schedule();
    }
  };
  const reconnect = () => (connecting ??= connect().finally(() => (connecting = undefined)));

  /** After a failure: try again (connect, or read everything) after a back-off that grows to 5 s. */
  function schedule(): void {
    if (closed || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      if (listener) void reloadAll();
      else void reconnect();
    }, backoff);
    retry.unref();
    backoff = Math.min(BACKOFF_MAX, backoff * 2);
  }

  const poll = setInterval(() => {
    if (!listener) return void reconnect();
    void reloadAll();
  }, config.poll);
  poll.unref();
  // The database may refuse new connections and leave the listening one alive, or that one may have
  // died silently: both are probed. Not current, it is read in full as soon as it answers.
  const probe = setInterval(() => {
    const client = listener;
    if (!client || connecting) return void reconnect();
    if (!freshness.current) return void reloadAll();
    freshness
      .probe(() =>
        Promise.all([client.query('SELECT 1').catch((err: Error) => lose(client, err)), pool.query(PROBE)]),
      )
      .catch((err: unknown) => problem(err, 'token store unavailable; the tokens held keep working'));
  }, every);
  probe.unref();
  const flush = setInterval(() => void usage.flush(), Math.min(config.last_used_interval, 5_000));
  flush.unref();
  void reconnect();

  const store: TokenStore = {
    ready: () => loaded,
    staleSince,
    tokens: () => held.tokens,
    subscribe: (l) => held.subscribe(l),
    touch: (id) => usage.touch(id),
    matches: (other) => JSON.stringify(other) === JSON.stringify(config),
    retain() {
      holders++;
      return store;
    },
    async close() {
      if (closed || --holders > 0) return;
      closed = true;
      clearInterval(poll);
      clearInterval(probe);
      metrics.tokenStores.delete(staleSince);
      clearInterval(flush);
      clearTimeout(retry);
      await Promise.allSettled([connecting, syncing]);
      const client = listener;
      listener = undefined;
      await client?.end().catch(() => undefined);
      await Promise.race([usage.flush(), new Promise((r) => setTimeout(r, CLOSE_FLUSH).unref())]);
      await pool.end().catch(() => undefined);
    },
  };
  return store;
}
