/** The sso-providers backend on PostgreSQL (issue 6). */
import type { BackendDeps } from '../index.js';
import type { PostgresStores } from '../postgres/index.js';
import type { SsoProvidersBackend } from './backend.js';

export async function createPostgresSsoProviders(
  db: PostgresStores,
  deps: BackendDeps,
): Promise<SsoProvidersBackend> {
  void db;
  void deps;
  throw new Error('the postgres backend is not available yet');
}
