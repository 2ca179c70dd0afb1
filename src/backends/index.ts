/**
 * Builds each operation's backend from its configuration. The only file that knows every backend
 * type: a new type is added here and in its own file, and nowhere else.
 */
import type { Config } from '../config/schema.js';
import type { Metrics } from '../observability/metrics.js';
import type { AssetGroupTagsBackend } from './asset-group-tags/backend.js';
import { createLocalAssetGroupTags } from './asset-group-tags/local.js';
import type { CollectorsBackend } from './collectors/backend.js';
import { createChecksumCache } from './collectors/cache.js';
import { openLocalCollectors } from './collectors/local.js';
import type { SsoProvidersBackend } from './sso-providers/backend.js';
import { createLocalSsoProviders } from './sso-providers/local.js';

export interface Backends {
  readonly collectors: CollectorsBackend;
  readonly ssoProviders: SsoProvidersBackend;
  readonly assetGroupTags: AssetGroupTagsBackend;
  /** Releases every backend's resources. */
  close(): Promise<void>;
}

/** The backends `config` names, the collectors one behind the checksum cache. Throws when one cannot start. */
export async function createBackends(config: Config, deps: { metrics: Metrics }): Promise<Backends> {
  const { backends, checksum_cache: cache } = config;
  const collectors = createChecksumCache(await openLocalCollectors(backends.collectors.path), {
    maxBytes: cache.max_bytes,
    maxEntryBytes: cache.max_entry_bytes,
    latestTtl: cache.latest_ttl,
    metrics: deps.metrics,
  });
  const [ssoProviders, assetGroupTags] = await Promise.all([
    createLocalSsoProviders(backends.sso_providers.path, { metrics: deps.metrics }),
    createLocalAssetGroupTags(backends.asset_group_tags.path),
  ]);
  return {
    collectors,
    ssoProviders,
    assetGroupTags,
    async close() {
      await Promise.allSettled([collectors.close(), ssoProviders.close(), assetGroupTags.close()]);
    },
  };
}
