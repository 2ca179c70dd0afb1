/** The PostgreSQL connection shared by the postgres backends of one configuration (issue 6). */
import type { PostgresConfig } from '../../config/schema.js';
import type { BackendDeps } from '../index.js';

/** An open database: its pool, migrated schema and health. */
export interface PostgresStores {
  ready(): boolean;
  close(): Promise<void>;
}

/** Opens the pool for `config`, applies the migrations unless disabled. Throws when it cannot. */
export async function openPostgres(config: PostgresConfig, deps: BackendDeps): Promise<PostgresStores> {
  void config;
  void deps;
  throw new Error('the postgres backend is not available yet');
}
