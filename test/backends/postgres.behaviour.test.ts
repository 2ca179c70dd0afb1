/** The shared behaviour suite against the postgres backends, each case in a schema of its own. */
import t from 'tap';
import { createPostgresAssetGroupTags } from '../../src/backends/asset-group-tags/postgres.js';
import { openPostgres } from '../../src/backends/postgres/index.js';
import { createPostgresSsoProviders } from '../../src/backends/sso-providers/postgres.js';
import { createLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import {
  createDatabase,
  createSchema,
  importStores,
  postgresConfig,
  requirePostgres,
} from '../helpers/postgres.js';
import { behaviourSuite } from './behaviour.js';

if (await requirePostgres(t)) {
  const database = await createDatabase(t);
  behaviourSuite(t, async (t, stores) => {
    const url = await createSchema(t, database);
    await importStores(t, url, stores);
    const config = postgresConfig(url);
    const deps = { metrics: createMetrics(), logger: createLogger('silent') };
    const db = await openPostgres(config, deps);
    t.teardown(() => db.close());
    t.ok(db.ready(), 'the database is ready');
    return {
      sso: createPostgresSsoProviders(db),
      tags: createPostgresAssetGroupTags(db),
    };
  });
}
