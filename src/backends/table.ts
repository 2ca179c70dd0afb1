/**
 * The backend types of each operation, by the `type` of their configuration. The one list to extend:
 * a new type is its own file (a `BackendType`: the shape of its configuration and how it opens) and
 * its entry here; the configuration schema and `createBackends` read this table.
 */
import { localAssetGroupTags } from './asset-group-tags/local.js';
import { postgresAssetGroupTags } from './asset-group-tags/postgres.js';
import { upstreamAssetGroupTags } from './asset-group-tags/upstream.js';
import { localCollectors } from './collectors/local.js';
import { upstreamCollectors } from './collectors/upstream.js';
import { localSsoProviders } from './sso-providers/local.js';
import { postgresSsoProviders } from './sso-providers/postgres.js';
import { upstreamSsoProviders } from './sso-providers/upstream.js';

export const BACKEND_TYPES = {
  collectors: { local: localCollectors, upstream: upstreamCollectors },
  sso_providers: { local: localSsoProviders, upstream: upstreamSsoProviders, postgres: postgresSsoProviders },
  asset_group_tags: {
    local: localAssetGroupTags,
    upstream: upstreamAssetGroupTags,
    postgres: postgresAssetGroupTags,
  },
} as const;
