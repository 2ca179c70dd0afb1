import { readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { seedFile } from '../../src/backends/seed.js';
import { call, multipart, ROOT, startGateway } from '../helpers/gateway.js';

const SAMPLE = path.join(ROOT, 'config', 'sso-providers.json');

t.test(
  'a seeded store is made from the sample when absent, and PATCHes change it, never the sample',
  async (t) => {
    const sample = readFileSync(SAMPLE, 'utf8');
    const dir = t.testdir({ 'seed.json': sample });
    const gw = await startGateway({
      backends: {
        sso_providers: {
          type: 'local',
          path: path.join(dir, 'state', 'nested', 'sso.json'),
          seed: path.join(dir, 'seed.json'),
        },
      },
    });
    t.teardown(() => gw.close());
    t.equal(readFileSync(path.join(dir, 'state', 'nested', 'sso.json'), 'utf8'), sample, 'made, folders too');
    const form = multipart([{ name: 'name', value: 'Renamed' }]);
    const res = await call(gw, {
      method: 'PATCH',
      target: '/api/v2/sso-providers/1',
      body: form.body,
      headers: { 'Content-Type': form.contentType },
    });
    t.equal(res.status, 200);
    t.match(readFileSync(path.join(dir, 'state', 'nested', 'sso.json'), 'utf8'), /"Renamed"/);
    t.equal(readFileSync(path.join(dir, 'seed.json'), 'utf8'), sample, 'the seed is untouched');
  },
);

t.test('a seed never overwrites a store already there', async (t) => {
  const dir = t.testdir({ 'seed.json': 'seed', 'store.json': 'mine' });
  await seedFile(path.join(dir, 'seed.json'), path.join(dir, 'store.json'));
  t.equal(readFileSync(path.join(dir, 'store.json'), 'utf8'), 'mine');
  await t.rejects(
    seedFile(path.join(dir, 'missing.json'), path.join(dir, 'new.json')),
    /cannot make .*new\.json/,
  );
});

t.test('the seed path is relative to the configuration file', async (t) => {
  const { parseConfig } = await import('../../src/config/load.js');
  const config = parseConfig(
    `backends:
  collectors: { type: local, path: c }
  sso_providers: { type: local, path: ../state/s.json, seed: s.json }
  asset_group_tags: { type: local, path: a.json }
`,
    '/srv/gateway/config',
  );
  t.match(config.backends.sso_providers, {
    path: '/srv/gateway/state/s.json',
    seed: '/srv/gateway/config/s.json',
  });
});
