/**
 * Builds each operation's backend from its configuration. The only file that knows every backend
 * type: a new type is added here and in its own file, and nowhere else.
 */
import type { Config } from '../config/schema.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { AssetGroupTagsBackend } from './asset-group-tags/backend.js';
import { createLocalAssetGroupTags } from './asset-group-tags/local.js';
import { createPostgresAssetGroupTags } from './asset-group-tags/postgres.js';
import { createUpstreamAssetGroupTags } from './asset-group-tags/upstream.js';
import type { CollectorsBackend } from './collectors/backend.js';
import { createChecksumCache } from './collectors/cache.js';
import { openLocalCollectors } from './collectors/local.js';
import { createUpstreamCollectors } from './collectors/upstream.js';
import { createPassthrough, type PassthroughBackend } from './passthrough/proxy.js';
import { openPostgres, type PostgresStores } from './postgres/index.js';
import type { SsoProvidersBackend } from './sso-providers/backend.js';
import { createLocalSsoProviders } from './sso-providers/local.js';
import { createPostgresSsoProviders } from './sso-providers/postgres.js';
import { createUpstreamSsoProviders } from './sso-providers/upstream.js';

export interface Backends {
  /** Present when `passthrough` is configured. */
  readonly passthrough: PassthroughBackend | undefined;
  readonly collectors: CollectorsBackend;
  readonly ssoProviders: SsoProvidersBackend;
  readonly assetGroupTags: AssetGroupTagsBackend;
  /** True while every backend can serve (upstreams reachable, databases connected). */
  ready(): boolean;
  /** Whether each backend can serve, by name (`collectors`, …, `passthrough`, `postgres`), for /readyz. */
  checks(): Record<string, boolean>;
  /** Releases every backend's resources. */
  close(): Promise<void>;
}

export interface BackendDeps {
  readonly metrics: Metrics;
  readonly logger: Logger;
}

/** The backends `config` names, the collectors one behind the checksum cache. Throws when one cannot start. */
export async function createBackends(config: Config, deps: BackendDeps): Promise<Backends> {
  const { backends, checksum_cache: cache } = config;
  const upstream = deps;
  const opened: Array<{ ready?(): boolean; close(): Promise<void> }> = [];
  // One pool per database URL, shared by the backends that name it.
  const databases = new Map<string, Promise<PostgresStores>>();
  const database = (c: Extract<typeof backends.sso_providers, { type: 'postgres' }>) => {
    let stores = databases.get(c.url);
    if (stores === undefined) {
      stores = openPostgres(c, deps);
      databases.set(c.url, stores);
    }
    return stores;
  };
  const open = async <T extends { ready?(): boolean; close(): Promise<void> }>(made: Promise<T>) => {
    const backend = await made;
    opened.push(backend);
    return backend;
  };
  try {
    const c = backends.collectors;
    const source = await (c.type === 'local'
      ? openLocalCollectors(c.path)
      : createUpstreamCollectors(c, 'collectors', upstream));
    // The cache closes (and reports the readiness of) the source it wraps.
    const collectors = createChecksumCache(source, {
      maxBytes: cache.max_bytes,
      maxEntryBytes: cache.max_entry_bytes,
      latestTtl: cache.latest_ttl,
      metrics: deps.metrics,
    });
    opened.push(collectors);
    const s = backends.sso_providers;
    const a = backends.asset_group_tags;
    const [ssoProviders, assetGroupTags] = await Promise.all([
      open<SsoProvidersBackend>(
        s.type === 'local'
          ? createLocalSsoProviders(s.path, { metrics: deps.metrics })
          : s.type === 'upstream'
            ? createUpstreamSsoProviders(s, 'sso_providers', upstream)
            : database(s).then((db) => createPostgresSsoProviders(db, deps)),
      ),
      open<AssetGroupTagsBackend>(
        a.type === 'local'
          ? createLocalAssetGroupTags(a.path)
          : a.type === 'upstream'
            ? createUpstreamAssetGroupTags(a, 'asset_group_tags', upstream)
            : database(a).then((db) => createPostgresAssetGroupTags(db, deps)),
      ),
    ]);
    const pools = await Promise.all(databases.values());
    const passthrough = config.passthrough && createPassthrough(config.passthrough, upstream);
    if (passthrough) opened.push(passthrough);
    const named: Array<[string, { ready?(): boolean }]> = [
      ['collectors', collectors],
      ['sso_providers', ssoProviders],
      ['asset_group_tags', assetGroupTags],
      ...(passthrough ? [['passthrough', passthrough] as [string, PassthroughBackend]] : []),
      ...pools.map((p, i) => [i === 0 ? 'postgres' : `postgres_${i + 1}`, p] as [string, PostgresStores]),
    ];
    const checks = () => Object.fromEntries(named.map(([name, b]) => [name, b.ready?.() ?? true]));
    return {
      passthrough,
      collectors,
      ssoProviders,
      assetGroupTags,
      ready: () => named.every(([, b]) => b.ready?.() ?? true),
      checks,
      async close() {
        await Promise.allSettled(opened.map((b) => b.close()));
        await Promise.allSettled(pools.map((p) => p.close()));
      },
    };
  } catch (err) {
    // Nothing half-built stays open (a pool, a timer) when a later backend fails to start.
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
