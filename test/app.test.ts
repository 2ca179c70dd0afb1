import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import { createApp } from '../src/app.js';
import { loadConfigFile } from '../src/config/load.js';
import { baseConfig, copySampleData, merge, patchInFlight, startGateway } from './helpers/gateway.js';
import { until } from './helpers/wait.js';

function configIn(dir: string, over: Record<string, unknown>) {
  const file = path.join(dir, 'gateway.yaml');
  writeFileSync(file, stringify(merge(baseConfig(), over)));
  return loadConfigFile(file);
}

t.test('the gateway does not start on a collectors path that is missing or not a folder', async (t) => {
  const dir = copySampleData();
  await t.rejects(
    createApp(configIn(dir, { backends: { collectors: { type: 'local', path: 'nowhere' } } })),
    /collectors directory .*nowhere cannot be read/,
  );
  await t.rejects(
    createApp(configIn(dir, { backends: { collectors: { type: 'local', path: 'asset-group-tags.json' } } })),
    /is not a directory/,
  );
});

t.test('the gateway does not start on a tmp_dir it cannot write', async (t) => {
  const dir = copySampleData();
  await t.rejects(createApp(configIn(dir, { server: { tmp_dir: '/no/such/folder' } })), /server\.tmp_dir/);
});

t.test('a stop cuts a stalled upload after the grace, logs it and leaves no temporary file', async (t) => {
  const spool = mkdtempSync(path.join(tmpdir(), 'gateway-spool-'));
  const gw = await startGateway({
    server: { shutdown_grace: '300ms', tmp_dir: spool, body_memory_threshold: 1024 },
  });
  const upload = await patchInFlight(gw, Buffer.alloc(64 * 1024, 'x'), 16 * 1024);
  await until('the body is spooled to a file', () => readdirSync(spool).length > 0);
  t.equal(readdirSync(spool).length, 1, 'the body is being spooled');
  await gw.close();
  t.same(readdirSync(spool), [], 'no temporary file is left');
  const line = gw.logs.find((l) => l.msg === 'request' && l.operation === 'UpdateSSOProvider');
  t.ok(line, 'the cut request has its log line');
  t.equal(line?.status, 499, 'logged as nginx does a request whose answer was never finished');
  upload.cancel();
});
