import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import type { SsoProviderPatch } from '../../src/backends/sso-providers/backend.js';
import { createLocalSsoProviders } from '../../src/backends/sso-providers/local.js';
import { isGatewayError } from '../../src/errors.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { FileLocks } from '../../src/backends/file-locks.js';
import { callOf, provider } from '../helpers/backend.js';

const NOW = new Date('2025-06-01T12:00:00.000Z');
const never = () => callOf();

/** A store file in a fresh directory; returns its path. */
function storeFile(t: Test, content: unknown, name = 'sso-providers.json'): string {
  const dir = t.testdir();
  const file = path.join(dir, name);
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

const open = (file: string, now: () => Date = () => NOW, metrics = createMetrics()) =>
  createLocalSsoProviders(file, { metrics, now });

t.test('get answers the wire shape by sso_provider_id, without storage-only fields', async (t) => {
  const file = storeFile(t, { providers: [provider(1), provider(7, 3)] });
  const backend = await open(file);
  const p = await backend.get(7, never());
  t.equal(p?.id, 3);
  t.same(p?.config, { auto_provision: { enabled: false, default_role_id: 1, role_provision: false } });
  t.notOk(p && 'metadata_xml' in p, 'no metadata_xml');
  t.notOk(p && 'auto_provision' in p, 'auto_provision only under config');
  t.equal(await backend.get(3, never()), undefined, 'the record id does not address it');
  t.equal(await backend.get(2, never()), undefined);
});

t.test('deleted providers and providers without a valid sso_provider_id are not found', async (t) => {
  const file = storeFile(t, {
    providers: [
      provider(1, 1, { deleted_at: { time: '2024-05-01T00:00:00Z', valid: true } }),
      provider(0, 2, { sso_provider_id: { int32: 0, valid: false } }),
    ],
  });
  const backend = await open(file);
  t.equal(await backend.get(1, never()), undefined);
  t.equal(await backend.update(1, { name: 'x' }, never()), undefined);
});

t.test('answers are copies: changing one does not change the store', async (t) => {
  const backend = await open(storeFile(t, { providers: [provider(1)] }));
  const p = await backend.get(1, never());
  if (p) p.config.auto_provision.enabled = true;
  t.equal((await backend.get(1, never()))?.config.auto_provision.enabled, false);
});

t.test('roleExists follows the roles list, or any positive 32-bit id without one', async (t) => {
  const listed = await open(storeFile(t, { roles: [1, 2], providers: [] }));
  t.same([await listed.roleExists(1, never()), await listed.roleExists(3, never())], [true, false]);
  const open_ = await open(storeFile(t, { providers: [] }));
  t.same(
    await Promise.all([1, 2_147_483_647, 0, -1, 2_147_483_648].map((id) => open_.roleExists(id, never()))),
    [true, true, false, false, false],
  );
});

t.test('a broken file stops the start with a message naming the file', async (t) => {
  const cases: Array<[string, unknown, RegExp]> = [
    ['not JSON', '{"providers": [', /is not valid JSON/],
    ['missing field', { providers: [{ ...provider(1), name: undefined }] }, /invalid at providers\.0\.name/],
    ['unknown key', { providers: [{ ...provider(1), nmae: 'x' }] }, /invalid at providers\.0/],
    [
      'local time',
      { providers: [provider(1, 1, { created_at: '2024-01-01T00:00:00+02:00' })] },
      /providers\.0\.created_at/,
    ],
    [
      'duplicate id',
      { providers: [provider(1), provider(1, 2)] },
      /providers\.1\.sso_provider_id: is used twice/,
    ],
    ['bad role', { roles: [0], providers: [] }, /invalid at roles\.0/],
  ];
  for (const [name, content, message] of cases) {
    const file = storeFile(t, content);
    await t.rejects(
      open(file),
      { message: new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}.*${message.source}`) },
      name,
    );
  }
  await t.rejects(open(path.join(t.testdir(), 'missing.json')), {
    message: /cannot read the SSO providers file .*missing\.json/,
  });
});

t.test('an update is durable: visible after a reload from disk', async (t) => {
  const file = storeFile(t, { roles: [1, 2, 3], providers: [provider(1), provider(7, 3)] });
  const backend = await open(file);
  const patch: SsoProviderPatch = {
    name: 'Okta',
    metadata: { xml: '<new/>', idpIssuerUri: 'urn:new', idpSsoUri: 'https://new/sso' },
    autoProvision: { enabled: true, default_role_id: 2, role_provision: true },
  };
  const result = await backend.update(7, patch, never());
  t.same(result?.changed, [
    'name',
    'display_name',
    'idp_issuer_uri',
    'idp_sso_uri',
    'metadata_xml',
    'config.auto_provision.enabled',
    'config.auto_provision.default_role_id',
    'config.auto_provision.role_provision',
  ]);
  t.match(result?.provider, {
    id: 3,
    name: 'Okta',
    display_name: 'Okta',
    idp_issuer_uri: 'urn:new',
    idp_sso_uri: 'https://new/sso',
    updated_at: '2025-06-01T12:00:00.000Z',
    created_at: '2024-01-01T00:00:00Z',
    config: { auto_provision: { enabled: true, default_role_id: 2, role_provision: true } },
  });
  const onDisk = JSON.parse(readFileSync(file, 'utf8'));
  t.same(onDisk.roles, [1, 2, 3]);
  t.equal(onDisk.providers[1].metadata_xml, '<new/>');
  t.same(onDisk.providers[1].auto_provision, { enabled: true, default_role_id: 2, role_provision: true });
  t.equal(onDisk.providers[0].name, 'provider 1', 'the other provider is kept');
  t.same(await (await open(file)).get(7, never()), result?.provider);
  t.same(readdirSync(path.dirname(file)), ['sso-providers.json'], 'no temporary file is left');
});

t.test('a no-op answers the provider as it is and writes nothing', async (t) => {
  const file = storeFile(t, { providers: [provider(1)] });
  const before = statSync(file);
  const backend = await open(file);
  const same = {
    name: 'provider 1',
    autoProvision: { enabled: false, default_role_id: 1, role_provision: false },
    metadata: {
      xml: '<md:EntityDescriptor/>',
      idpIssuerUri: 'urn:idp',
      idpSsoUri: 'https://idp.example.com/sso',
    },
  };
  for (const patch of [{}, same]) {
    const result = await backend.update(1, patch, never());
    t.same(result?.changed, []);
    t.equal(result?.provider.updated_at, '2024-01-02T00:00:00Z');
  }
  const after = statSync(file);
  t.same([after.ino, after.mtimeMs], [before.ino, before.mtimeMs], 'the file was not replaced');
});

t.test('concurrent updates never lose one another', async (t) => {
  const file = storeFile(t, { providers: Array.from({ length: 50 }, (_, i) => provider(i + 1)) });
  const backend = await open(file, () => new Date());
  const renames = Array.from({ length: 50 }, (_, i) =>
    backend.update(i + 1, { name: `renamed ${i + 1}` }, never()),
  );
  const onOne = [
    backend.update(
      1,
      { autoProvision: { enabled: true, default_role_id: 4, role_provision: true } },
      never(),
    ),
    backend.update(1, { metadata: { xml: '<m/>', idpIssuerUri: 'urn:m', idpSsoUri: 'https://m' } }, never()),
  ];
  await Promise.all([...renames, ...onOne]);
  const reloaded = await open(file);
  for (let i = 1; i <= 50; i++) t.equal((await reloaded.get(i, never()))?.name, `renamed ${i}`);
  t.match(await reloaded.get(1, never()), {
    idp_issuer_uri: 'urn:m',
    config: { auto_provision: { enabled: true, default_role_id: 4, role_provision: true } },
  });
});

t.test('an aborted signal before the commit point writes nothing', async (t) => {
  const file = storeFile(t, { providers: [provider(1)] });
  const bytes = readFileSync(file);
  const reason = new Error('deadline');

  const early = new AbortController();
  early.abort(reason);
  const backend = await open(file);
  t.equal(
    await backend.update(1, { name: 'x' }, callOf(early.signal)).catch((e) => e),
    reason,
    'aborted before the lock',
  );

  // The clock is read while the new record is built: aborting there lands just before the rename.
  const late = new AbortController();
  const racing = await open(file, () => {
    late.abort(reason);
    return NOW;
  });
  t.equal(
    await racing.update(1, { name: 'x' }, callOf(late.signal)).catch((e) => e),
    reason,
    'aborted during the write',
  );
  t.same(readFileSync(file), bytes, 'the file is unchanged');
  t.same(readdirSync(path.dirname(file)), ['sso-providers.json'], 'the temporary file is removed');
  t.equal((await racing.get(1, never()))?.name, 'provider 1', 'memory is unchanged');
});

t.test('a failed write keeps the old file and the old state', async (t) => {
  const root = t.testdir();
  const dir = path.join(root, 'data');
  mkdirSync(dir);
  const file = path.join(dir, 'sso-providers.json');
  writeFileSync(file, JSON.stringify({ providers: [provider(1)] }));
  const bytes = readFileSync(file);
  const backend = await open(file);

  // A directory that became a regular file: not even root can create the temporary file in it.
  renameSync(dir, path.join(root, 'moved'));
  writeFileSync(dir, 'not a directory');
  const err = await backend.update(1, { name: 'x' }, never()).catch((e) => e);
  t.type(err, Error);
  t.notOk(isGatewayError(err), 'a plain error: the pipeline answers 500');
  t.match(err.message, /(reading|writing) the SSO providers file .* failed/);
  t.equal((await backend.get(1, never()))?.name, 'provider 1', 'memory is unchanged');

  rmSync(dir);
  renameSync(path.join(root, 'moved'), dir);
  t.same(readFileSync(file), bytes, 'the file is unchanged');
  t.equal((await backend.update(1, { name: 'y' }, never()))?.provider.name, 'y', 'later updates still work');
});

t.test('the file keeps its permissions and store timings are recorded', async (t) => {
  const file = storeFile(t, { providers: [provider(1)] });
  const { chmodSync } = await import('node:fs');
  chmodSync(file, 0o640);
  const metrics = createMetrics();
  const backend = await open(file, () => NOW, metrics);
  await backend.get(1, never());
  await backend.update(1, { name: 'x' }, never());
  await backend.close();
  t.equal(statSync(file).mode & 0o777, 0o640);
  const text = await metrics.registry.metrics();
  t.match(
    text,
    /gateway_store_operation_duration_seconds_count\{backend="local",operation="sso_providers.get"\} 1/,
  );
  t.match(
    text,
    /gateway_store_operation_duration_seconds_count\{backend="local",operation="sso_providers.update"\} 1/,
  );
});

t.test('two instances on one file (before and after a reload) never lose an update', async (t) => {
  const file = storeFile(t, { roles: [1, 2], providers: [provider(1)] });
  const metrics = createMetrics();
  // The app's per-file turns outlive a configuration: both instances take turns through them.
  const fileLocks = new FileLocks();
  const before = await createLocalSsoProviders(file, { metrics, fileLocks });
  const after = await createLocalSsoProviders(file, { metrics, fileLocks });
  await Promise.all([
    before.update(1, { name: 'renamed by the old instance' }, never()),
    after.update(1, { autoProvision: { enabled: true, default_role_id: 2, role_provision: true } }, never()),
  ]);
  const onDisk = JSON.parse(readFileSync(file, 'utf8')).providers.find((p: { id: number }) => p.id === 1);
  t.equal(onDisk.name, 'renamed by the old instance');
  t.same(onDisk.auto_provision, { enabled: true, default_role_id: 2, role_provision: true });
  t.equal(
    (await after.update(1, { name: 'again' }, never()))?.provider.config.auto_provision.default_role_id,
    2,
  );
});

t.test('an operator edit of the file is picked up by the next update, not overwritten', async (t) => {
  const file = storeFile(t, { providers: [provider(1)] });
  const backend = await createLocalSsoProviders(file, { metrics: createMetrics() });
  const edited = JSON.parse(readFileSync(file, 'utf8'));
  edited.providers[0].principal_attribute_mappings = ['edited-by-operator'];
  writeFileSync(file, JSON.stringify(edited));
  const result = await backend.update(1, { name: 'after the edit' }, never());
  t.same(result?.provider.principal_attribute_mappings, ['edited-by-operator']);
  t.same(JSON.parse(readFileSync(file, 'utf8')).providers[0].principal_attribute_mappings, [
    'edited-by-operator',
  ]);
});
