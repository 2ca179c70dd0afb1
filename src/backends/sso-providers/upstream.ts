/** The sso-providers backend on an upstream service speaking this API. */
import type { UpstreamConfig } from '../../config/schema.js';
import type { BackendDeps } from '../index.js';
import type { SsoProvidersBackend } from './backend.js';

export async function createUpstreamSsoProviders(
  config: UpstreamConfig,
  name: string,
  deps: BackendDeps,
): Promise<SsoProvidersBackend> {
  void config;
  void name;
  void deps;
  throw new Error('the upstream backend is not available yet');
}
