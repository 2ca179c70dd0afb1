/**
 * Opens each operation's backend by the `type` its configuration names (the table in `table.ts`),
 * the collectors one behind the checksum cache, and the database pools they share.
 */
import type { Config } from '../config/schema.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { Tracing } from '../observability/tracing/tracing.js';
import type { AssetGroupTagsBackend } from './asset-group-tags/backend.js';
import type { BackendDeps, Closable } from './backend-type.js';
import type { CollectorsBackend } from './collectors/backend.js';
import { createChecksumCache } from './collectors/cache.js';
import type { FileLocks } from './file-locks.js';
import type { PostgresConfig } from './postgres/config.js';
import { openPostgres, type PostgresPool } from './postgres/index.js';
import type { SsoProvidersBackend } from './sso-providers/backend.js';
import { BACKEND_TYPES } from './table.js';

export interface Backends {
  /** The configured collectors backend, behind the checksum cache. */
  readonly collectors: CollectorsBackend;
  readonly ssoProviders: SsoProvidersBackend;
  readonly assetGroupTags: AssetGroupTagsBackend;
  /** Whether each backend can serve, by name (`collectors`, …, `postgres`), for /readyz. */
  checks(): Record<string, boolean>;
  /** The open pool of the database at `url`, when a backend uses it (the audit trail shares it). */
  pool(url: string): PostgresPool | undefined;
  /** Releases every backend's resources. */
  close(): Promise<void>;
}

type Table = typeof BACKEND_TYPES;
type Operation = keyof Table;
/** What a backend of `Op` is, whatever its type. */
type BackendOf<Op extends Operation> = Table[Op][keyof Table[Op]] extends {
  open(...args: never[]): Promise<infer B>;
}
  ? B
  : never;

/** The backends `config` names. Throws when one cannot start; nothing half-built stays open then. */
export async function createBackends(
  config: Config,
  deps: {
    readonly metrics: Metrics;
    readonly logger: Logger;
    readonly fileLocks: FileLocks;
    readonly tracing?: Tracing;
  },
): Promise<Backends> {
  const { backends, checksum_cache: cache } = config;
  const opened: Closable[] = [];
  // One pool per database URL, shared by the backends that name it.
  const databases = new Map<string, Promise<PostgresPool>>();
  const database = (c: PostgresConfig) => {
    let pool = databases.get(c.url);
    if (pool === undefined) {
      pool = openPostgres(c, deps);
      databases.set(c.url, pool);
    }
    return pool;
  };
  const open = async <Op extends Operation>(name: Op): Promise<BackendOf<Op>> => {
    const c = backends[name];
    const types = BACKEND_TYPES[name] as unknown as Record<
      string,
      { open(config: typeof c, deps: BackendDeps): Promise<BackendOf<Op>> }
    >;
    const backend = await (types[c.type] as (typeof types)[string]).open(c, { ...deps, name, database });
    opened.push(backend as Closable);
    return backend;
  };
  try {
    // All three settle before any failure is thrown, so that every one opened is closed.
    const settled = await Promise.allSettled([
      open('collectors'),
      open('sso_providers'),
      open('asset_group_tags'),
    ]);
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    const [source, ssoProviders, assetGroupTags] = settled.map(
      (s) => (s as PromiseFulfilledResult<unknown>).value,
    ) as [BackendOf<'collectors'>, BackendOf<'sso_providers'>, BackendOf<'asset_group_tags'>];
    // The cache closes (and reports the readiness of) the source it wraps.
    opened.splice(opened.indexOf(source), 1);
    const collectors = createChecksumCache(source, {
      maxBytes: cache.max_bytes,
      maxEntryBytes: cache.max_entry_bytes,
      latestTtl: cache.latest_ttl,
      metrics: deps.metrics,
    });
    opened.push(collectors);
    const pools = await Promise.all(databases.values());
    const byUrl = new Map([...databases.keys()].map((url, i) => [url, pools[i] as PostgresPool]));
    const named: Array<[string, Closable]> = [
      ['collectors', collectors],
      ['sso_providers', ssoProviders],
      ['asset_group_tags', assetGroupTags],
      ...pools.map((p, i): [string, Closable] => [i === 0 ? 'postgres' : `postgres_${i + 1}`, p]),
    ];
    return {
      collectors,
      ssoProviders,
      assetGroupTags,
      checks: () => Object.fromEntries(named.map(([name, b]) => [name, b.ready?.() ?? true])),
      pool: (url) => byUrl.get(url),
      async close() {
        await Promise.allSettled(opened.map((b) => b.close()));
        await Promise.allSettled(pools.map((p) => p.close()));
      },
    };
  } catch (err) {
    await Promise.allSettled(opened.map((b) => b.close()));
    await Promise.allSettled(
      [...databases.values()].map((p) =>
        p.then(
          (db) => db.close(),
          () => undefined,
        ),
      ),
    );
    throw err;
  }
}
