/** The asset-group-tags backend on PostgreSQL (issue 6). */
import type { BackendDeps } from '../index.js';
import type { PostgresStores } from '../postgres/index.js';
import type { AssetGroupTagsBackend } from './backend.js';

export async function createPostgresAssetGroupTags(
  db: PostgresStores,
  deps: BackendDeps,
): Promise<AssetGroupTagsBackend> {
  void db;
  void deps;
  throw new Error('the postgres backend is not available yet');
}
