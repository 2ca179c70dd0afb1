/** The asset-group-tags backend on an upstream service speaking this API. */
import type { UpstreamConfig } from '../../config/schema.js';
import type { BackendDeps } from '../index.js';
import type { AssetGroupTagsBackend } from './backend.js';

export async function createUpstreamAssetGroupTags(
  config: UpstreamConfig,
  name: string,
  deps: BackendDeps,
): Promise<AssetGroupTagsBackend> {
  void config;
  void name;
  void deps;
  throw new Error('the upstream backend is not available yet');
}
