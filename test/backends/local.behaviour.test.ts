/** The shared behaviour suite against the local (JSON file) backends. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { createLocalAssetGroupTags } from '../../src/backends/asset-group-tags/local.js';
import { createLocalSsoProviders } from '../../src/backends/sso-providers/local.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { behaviourSuite } from './behaviour.js';

behaviourSuite(
  t,
  async (t, stores) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'gateway-behaviour-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(path.join(dir, 'sso.json'), JSON.stringify(stores.sso));
    writeFileSync(path.join(dir, 'tags.json'), JSON.stringify(stores.tags));
    const sso = await createLocalSsoProviders(path.join(dir, 'sso.json'), { metrics: createMetrics() });
    const tags = await createLocalAssetGroupTags(path.join(dir, 'tags.json'));
    t.teardown(async () => {
      await sso.close();
      await tags.close();
    });
    return { sso, tags };
  },
  { inMemory: true },
);
