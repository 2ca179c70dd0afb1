import { symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { createLocalCollectors } from '../../src/backends/collectors/local.js';
import { callOf } from '../helpers/backend.js';

const never = () => callOf();
const line = (name: string) => `${'a'.repeat(64)}  ${name}\n`;

/** A collectors directory holding `sharphound` files with these names (each holding its own line). */
function collectorsDir(t: Test, names: string[]): string {
  return t.testdir({
    sharphound: Object.fromEntries(names.map((n) => [n, line(n)])),
  });
}

t.test('latest is the highest stable version by semver order, not string order', async (t) => {
  const dir = collectorsDir(t, [
    'sharphound-v2.9.0.zip.sha256',
    'sharphound-v2.10.0.zip.sha256',
    'sharphound-v2.10.0.zip',
    'sharphound-v2.11.0-rc.1.zip.sha256',
  ]);
  const file = await createLocalCollectors(dir).getChecksum('sharphound', 'latest', never());
  t.equal(file?.version, '2.10.0');
  t.equal(file?.bytes.toString(), line('sharphound-v2.10.0.zip.sha256'));
});

t.test('names that are not strict semver are ignored when resolving latest', async (t) => {
  const dir = collectorsDir(t, [
    'sharphound-v1.0.0.zip.sha256',
    'sharphound-v2.12.zip.sha256',
    'sharphound-v03.0.0.zip.sha256',
    'sharphound-v4.0.0+build.1.zip.sha256',
    'sharphound-vlatest.zip.sha256',
    'sharphound-v5.0.0.zip.sha256.tmp',
    'azurehound-v6.0.0.zip.sha256',
    'README.md',
  ]);
  const file = await createLocalCollectors(dir).getChecksum('sharphound', 'latest', never());
  t.equal(file?.version, '1.0.0');
});

t.test('an explicit version, a pre-release included, is served by exact name', async (t) => {
  const dir = collectorsDir(t, ['sharphound-v2.9.0.zip.sha256', 'sharphound-v2.11.0-rc.1.zip.sha256']);
  const backend = createLocalCollectors(dir);
  t.equal((await backend.getChecksum('sharphound', '2.9.0', never()))?.version, '2.9.0');
  const rc = await backend.getChecksum('sharphound', '2.11.0-rc.1', never());
  t.equal(rc?.bytes.toString(), line('sharphound-v2.11.0-rc.1.zip.sha256'));
});

t.test('an unknown version, or a release outside the layout, is undefined', async (t) => {
  const dir = collectorsDir(t, ['sharphound-v2.9.0.zip.sha256']);
  const backend = createLocalCollectors(dir);
  t.equal(await backend.getChecksum('sharphound', '2.9.1', never()), undefined);
  t.equal(await backend.getChecksum('sharphound', 'v2.9.0', never()), undefined);
  t.equal(await backend.getChecksum('sharphound', '../sharphound/sharphound-v2.9.0', never()), undefined);
  t.equal(await backend.getChecksum('../x' as 'sharphound', '2.9.0', never()), undefined);
});

t.test('a type with no directory, or only pre-releases, has no latest', async (t) => {
  const dir = collectorsDir(t, ['sharphound-v3.0.0-beta.zip.sha256']);
  const backend = createLocalCollectors(dir);
  t.equal(await backend.getChecksum('sharphound', 'latest', never()), undefined);
  t.equal(await backend.getChecksum('openhound', 'latest', never()), undefined);
  t.equal(await backend.getChecksum('openhound', '1.0.0', never()), undefined);
  t.equal(
    await createLocalCollectors(join(dir, 'nowhere')).getChecksum('azurehound', 'latest', never()),
    undefined,
  );
});

t.test('a release added to the directory appears without a restart', async (t) => {
  const dir = collectorsDir(t, ['sharphound-v2.9.0.zip.sha256']);
  const backend = createLocalCollectors(dir);
  t.equal((await backend.getChecksum('sharphound', 'latest', never()))?.version, '2.9.0');
  await writeFile(join(dir, 'sharphound', 'sharphound-v2.10.0.zip.sha256'), line('new'));
  const file = await backend.getChecksum('sharphound', 'latest', never());
  t.equal(file?.version, '2.10.0');
  t.equal(file?.bytes.toString(), line('new'));
});

t.test('an aborted signal stops the read with its reason', async (t) => {
  const dir = collectorsDir(t, ['sharphound-v2.9.0.zip.sha256']);
  const backend = createLocalCollectors(dir);
  const controller = new AbortController();
  const reason = new Error('deadline');
  controller.abort(reason);
  await t.rejects(async () => backend.getChecksum('sharphound', 'latest', callOf(controller.signal)), reason);
  await t.rejects(async () => backend.getChecksum('sharphound', '2.9.0', callOf(controller.signal)), reason);
  await backend.close();
});

t.test('an unreadable directory or file is an error, not "no release"', async (t) => {
  const dir = collectorsDir(t, []);
  const backend = createLocalCollectors(dir);
  // A symbolic link to itself cannot be read, whoever runs the test.
  const file = join(dir, 'sharphound', 'sharphound-v2.9.0.zip.sha256');
  await symlink(file, file);
  await t.rejects(async () => backend.getChecksum('sharphound', '2.9.0', never()), { code: 'ELOOP' });
  await symlink(join(dir, 'azurehound'), join(dir, 'azurehound'));
  await t.rejects(async () => backend.getChecksum('azurehound', 'latest', never()), { code: 'ELOOP' });
});
