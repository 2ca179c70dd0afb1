/** The configuration of a `type: postgres` backend. */
import { z } from 'zod';
import { bool, duration, int, leaf } from '../../config/leaves.js';

export const postgresBackendShape = z.strictObject({
  type: z.literal('postgres'),
  url: leaf(z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')),
  pool_size: int(1, 1000).default(10),
  statement_timeout: duration(24 * 3_600_000, 1).default(30_000),
  connect_timeout: duration(3_600_000, 1).default(5_000),
  migrate: bool().default(true),
  // How often an idle pool proves the database answers (and, before the schema is ready, retries it).
  health_check_interval: duration(3_600_000, 100).default(5_000),
});

export type PostgresConfig = z.output<typeof postgresBackendShape>;
