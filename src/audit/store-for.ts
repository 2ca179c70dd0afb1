/**
 * Which audit store a configuration names (contract §12), and opening it. Without `audit.store` the
 * trail follows the `sso_providers` backend: `postgres`, the same database; `local`, the JSON-lines
 * file `<providers file>.audit.jsonl`; `upstream`, no trail.
 */
import { type AuditConfig, auditPoolDefaults } from '../config/audit.js';
import type { AuditMetrics } from '../observability/audit-metrics.js';
import type { Logger } from '../observability/logger.js';
import type { Schema } from '../postgres/migrations.js';
import { openFileAuditStore } from './file.js';
import { openAuditPool } from './pool.js';
import { createPostgresAuditStore } from './postgres.js';
import type { AuditDatabase, AuditStore } from './store.js';
import { type AuditTrail, createAuditTrail } from './trail.js';

/** The parts of a gateway configuration the audit trail reads (what the configuration refuses: `config/schema.ts`). */
export interface AuditConfigSource {
  readonly audit?: AuditConfig | undefined;
  readonly backends: {
    readonly sso_providers: { readonly type: string; readonly url?: string; readonly path?: string };
  };
}

/** Where the trail is kept. */
export type AuditTarget =
  | {
      readonly type: 'postgres';
      readonly url: string;
      /** The providers' own database: `success` is written in the change's transaction. */
      readonly sharesProviders: boolean;
      readonly pool_size: number;
      readonly connect_timeout: number;
      readonly statement_timeout: number;
      readonly migrate: boolean;
    }
  | { readonly type: 'file'; readonly path: string };

/** The trail `config` names, or undefined for none (an upstream providers backend, no `audit.store`). */
export function auditStoreFor(config: AuditConfigSource): AuditTarget | undefined {
  const providers = config.backends.sso_providers;
  const store = config.audit?.store;
  if (store?.type === 'file') return { type: 'file', path: store.path };
  if (store?.type === 'postgres') {
    const { type: _type, ...pool } = store;
    return {
      type: 'postgres',
      ...pool,
      sharesProviders: providers.type === 'postgres' && providers.url === store.url,
    };
  }
  if (providers.type === 'postgres' && providers.url !== undefined) {
    const { type: _type, url: _url, ...pool } = auditPoolDefaults;
    return { type: 'postgres', ...pool, url: providers.url, sharesProviders: true };
  }
  if (providers.type === 'local' && providers.path !== undefined) {
    return { type: 'file', path: `${providers.path}.audit.jsonl` };
  }
  return undefined;
}

/**
 * Opens the store of `target`. A PostgreSQL trail in the providers' database uses `database` (the
 * shared pool) when given; otherwise it opens a pool of its own, closed with the store.
 */
export async function openAuditStore(
  target: AuditTarget,
  deps: {
    readonly logger: Logger;
    /** The gateway's schema, migrated (or checked) in a database of the trail's own. */
    readonly schema: Schema;
    readonly database?: AuditDatabase;
    readonly now?: () => number;
  },
): Promise<AuditStore> {
  const { logger, now } = deps;
  if (target.type === 'file') return openFileAuditStore(target.path, { logger, ...(now ? { now } : {}) });
  if (deps.database !== undefined) return createPostgresAuditStore(deps.database, now ? { now } : {});
  const pool = await openAuditPool({ ...target, schema: deps.schema }, (err) =>
    logger.warn({ err: err.message }, 'audit database connection lost'),
  );
  const store = createPostgresAuditStore(pool, now ? { now } : {});
  return {
    ...store,
    async close() {
      await store.close();
      await pool.close();
    },
  };
}

/**
 * The trail `config` names, open; undefined when it names none. A trail in the providers' own
 * database writes through their pool (`database` gives it by URL), so that `success` goes in the
 * change's transaction.
 */
export async function openAuditTrail(
  config: AuditConfigSource,
  deps: {
    readonly logger: Logger;
    readonly metrics: AuditMetrics;
    readonly schema: Schema;
    readonly database?: (url: string) => AuditDatabase | undefined;
  },
): Promise<AuditTrail | undefined> {
  const target = auditStoreFor(config);
  if (target === undefined) return undefined;
  const { logger, metrics, schema } = deps;
  const database =
    target.type === 'postgres' && target.sharesProviders ? deps.database?.(target.url) : undefined;
  const store = await openAuditStore(target, { logger, schema, ...(database && { database }) });
  logger.info({ audit_store: store.kind, audit_where: store.where }, 'audit trail open');
  return createAuditTrail(store, {
    logger,
    metrics,
    refused: config.audit?.refused ?? true,
    sharesTransactions: database !== undefined,
  });
}
