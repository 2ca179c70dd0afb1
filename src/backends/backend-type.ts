/**
 * What every backend type provides, and what it is given. A type is one file per operation it
 * serves (`collectors/local.ts`, …), exporting a `BackendType`: its configuration's shape and how it
 * opens. The table (`table.ts`) lists them; the configuration schema and `createBackends` read it.
 */
import { z } from 'zod';
import { str } from '../config/leaves.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { Tracing } from '../observability/tracing/tracing.js';
import type { FileLocks } from './file-locks.js';
import type { PostgresConfig } from './postgres/config.js';
import type { PostgresPool } from './postgres/index.js';

/** What a backend is given when it opens. */
export interface BackendDeps {
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** Traces backend calls (upstream requests, database statements); absent when tracing is off. */
  readonly tracing?: Tracing;
  /** The operation's configuration key (`collectors`, …): the label of its metrics and log lines. */
  readonly name: string;
  /** The pool of a database, opened once per URL and shared by the backends that name it. */
  database(config: PostgresConfig): Promise<PostgresPool>;
  /** Serialises the writes of one local file across the app's configurations (a reload). */
  readonly fileLocks: FileLocks;
}

/** One backend type of one operation: the shape of its configuration (`type: <name>`, …) and its opening. */
export interface BackendType<Config extends { type: string }, Backend> {
  readonly config: z.ZodType<Config>;
  /** Opens the backend; throws when it cannot start (a malformed data file, say). */
  open(config: Config, deps: BackendDeps): Promise<Backend>;
}

/** `{type: local, path}`: the embedded store's files (contract §1). */
export const localBackendShape = z.strictObject({ type: z.literal('local'), path: str(1) });
export type LocalConfig = z.output<typeof localBackendShape>;

/** `{type: local, path, seed}`: a store file the gateway writes, made from `seed` when absent. */
export const seededLocalShape = localBackendShape.extend({ seed: str(1).optional() });
export type SeededLocalConfig = z.output<typeof seededLocalShape>;

/** Every backend can say whether it serves and be closed. */
export interface Closable {
  /** False while the backend cannot serve (an upstream or a database unreachable); absent: always ready. */
  ready?(): boolean;
  close(): Promise<void>;
}
