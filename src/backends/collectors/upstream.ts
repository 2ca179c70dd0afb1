/** The collectors backend on an upstream service speaking this API. */
import type { UpstreamConfig } from '../../config/schema.js';
import type { BackendDeps } from '../index.js';
import type { CollectorsBackend } from './backend.js';

export async function createUpstreamCollectors(
  config: UpstreamConfig,
  name: string,
  deps: BackendDeps,
): Promise<CollectorsBackend> {
  void config;
  void name;
  void deps;
  throw new Error('the upstream backend is not available yet');
}
