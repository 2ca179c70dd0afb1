/**
 * `gateway migrate` and `gateway import`: usage, the loaded data, idempotence, the local formats'
 * meaning kept, refusals that change nothing, and no URL (or password) in any message.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { runImport } from '../../src/cli/import.js';
import { runMigrate } from '../../src/cli/migrate.js';
import { member, selector, SSO, TAGS } from '../backends/behaviour.js';
import { provider } from '../helpers/backend.js';
import {
  createDatabase,
  createSchema,
  importStores,
  requirePostgres,
  runCli,
  sql,
  withPort,
} from '../helpers/postgres.js';

/** The counts an import printed, by table: `[inserted, updated, deleted]`. */
function counts(stdout: string): Record<string, number[]> {
  const out: Record<string, number[]> = {};
  for (const m of stdout.matchAll(/^(\w+): (\d+) inserted, (\d+) updated, (\d+) deleted$/gm)) {
    out[m[1] as string] = [Number(m[2]), Number(m[3]), Number(m[4])];
  }
  return out;
}

t.test('usage mistakes exit 2 with the usage; --help exits 0', async (t) => {
  const url = 'postgres://u:s3cret@127.0.0.1:1/x';
  for (const [run, argv, message] of [
    [runMigrate, [], /--postgres URL \(or GATEWAY_POSTGRES_URL\) is required/],
    [runMigrate, ['--postgres', 'mysql://x'], /must be a postgres:\/\/ URL/],
    [runMigrate, ['--postgres', url, 'extra'], /Unexpected argument/],
    [runImport, ['--postgres', url], /give --sso-providers FILE, --asset-group-tags FILE or both/],
    [runImport, ['--postgres', url, '--nope'], /Unknown option/],
  ] as const) {
    const r = await runCli(run, [...argv]);
    t.equal(r.code, 2, argv.join(' '));
    t.match(r.stderr, message);
    t.match(r.stderr, /usage: gateway (migrate|import)/);
  }
  for (const run of [runMigrate, runImport]) {
    const r = await runCli(run, ['--help']);
    t.equal(r.code, 0);
    t.match(r.stdout, /^usage: gateway/);
  }
});

t.test('an unreachable database exits 1 without showing the URL or its password', async (t) => {
  const url = 'postgres://gateway:s3cret@127.0.0.1:1/x';
  const r = await runCli(runMigrate, [], { GATEWAY_POSTGRES_URL: url });
  t.equal(r.code, 1);
  t.match(r.stderr, /^gateway migrate: connect ECONNREFUSED/);
  t.notMatch(r.stderr, /s3cret/);
});

t.test('import refuses a file it cannot read or load, naming it, before touching the database', async (t) => {
  const dir = t.testdir({
    'bad.json': '{',
    'wrong.json': JSON.stringify({ providers: [{ id: 'x' }] }),
    'twice.json': JSON.stringify({ providers: [provider(1, 5), provider(2, 5)] }),
    'moved.json': JSON.stringify({
      tags: [{ id: 1, name: 'a', selectors: [selector(1, 2, [])] }],
      members: [],
    }),
    'dup.json': JSON.stringify({
      tags: [
        { id: 1, name: 'a', selectors: [selector(1, 1, [])] },
        { id: 2, name: 'b', selectors: [selector(1, 2, [])] },
      ],
      members: [],
    }),
  });
  const url = withPort('postgres://gateway:s3cret@127.0.0.1/x', 1);
  const cases = [
    ['--sso-providers', 'missing.json', /missing\.json: ENOENT/],
    ['--sso-providers', 'bad.json', /bad\.json: .*JSON/],
    ['--sso-providers', 'wrong.json', /wrong\.json is invalid at providers\.0\.id: /],
    ['--sso-providers', 'twice.json', /twice\.json: two providers have the id 5/],
    ['--asset-group-tags', 'moved.json', /moved\.json: selector 1 is listed under tag 1 but names tag 2/],
    ['--asset-group-tags', 'dup.json', /dup\.json: selector 1 appears twice/],
  ] as const;
  for (const [flag, file, message] of cases) {
    const r = await runCli(runImport, ['--postgres', url, flag, path.join(dir, file)]);
    t.equal(r.code, 1, file);
    t.match(r.stderr, message);
    t.notMatch(r.stderr, /ECONNREFUSED/, 'refused before connecting');
  }
});

t.test('against the database', async (t) => {
  if (!(await requirePostgres(t))) return;
  const database = await createDatabase(t);

  t.test('migrate applies the migrations once; a second run has nothing to do', async (t) => {
    const url = await createSchema(t, database);
    const first = await runCli(runMigrate, ['--postgres', url]);
    t.same(first, { code: 0, stdout: 'applied migrations 1, 2, 3, 4; schema is at version 4\n', stderr: '' });
    const second = await runCli(runMigrate, [], { GATEWAY_POSTGRES_URL: url });
    t.same(second, { code: 0, stdout: 'schema is up to date (version 4)\n', stderr: '' });
  });

  t.test('import loads both files; a second run changes nothing', async (t) => {
    const url = await createSchema(t, database);
    const first = counts((await importStores(t, url, { sso: SSO, tags: TAGS })).stdout);
    t.same(first, {
      roles: [3, 0, 0],
      sso_providers: [3, 0, 0],
      saml_providers: [4, 0, 0],
      gateway_settings: [1, 0, 0],
      asset_group_tags: [2, 0, 0],
      asset_group_tag_selectors: [4, 0, 0],
      asset_group_tag_selector_seeds: [5, 0, 0],
      asset_group_members: [5, 0, 0],
      // 101,102 (999 is no member) + 101,103 (101 twice) + 101 + 102,104
      asset_group_tag_selector_members: [7, 0, 0],
    });
    const snapshot = () =>
      sql(url, `SELECT xmin::text, * FROM saml_providers ORDER BY id`).then((r) => JSON.stringify(r));
    const before = await snapshot();
    const second = counts((await importStores(t, url, { sso: SSO, tags: TAGS })).stdout);
    t.ok(
      Object.values(second).every((c) => c.join() === '0,0,0'),
      'every table: 0 inserted, 0 updated, 0 deleted',
    );
    t.equal(await snapshot(), before, 'no row was rewritten (same xmin)');
    const [deleted] = await sql(url, 'SELECT deleted_at, sso_provider_id FROM saml_providers WHERE id = 20');
    t.same(deleted, { deleted_at: new Date('2024-05-01T00:00:00Z'), sso_provider_id: 2 });
    const [unlinked] = await sql(url, 'SELECT sso_provider_id FROM saml_providers WHERE id = 30');
    t.same(unlinked, { sso_provider_id: null }, 'an invalid sso_provider_id is stored as NULL');
  });

  t.test('import makes the tables match a changed file: updates, inserts and deletes', async (t) => {
    const url = await createSchema(t, database);
    await importStores(t, url, { sso: SSO, tags: TAGS });
    const sso = structuredClone(SSO) as { roles?: number[]; providers: Array<Record<string, unknown>> };
    delete sso.roles;
    sso.providers = [
      { ...(sso.providers[0] as object), name: 'Renamed' },
      // Provider 4 moves to another SAML record: the deferred unique constraint allows it.
      provider(4, 41),
    ];
    const tags = structuredClone(TAGS);
    tags.tags = [{ ...tags.tags[0]!, selectors: [selector(3, 1, [101, 106])] }];
    tags.members = [member(101), member(106)];
    const r = counts((await importStores(t, url, { sso, tags })).stdout);
    t.same(r.roles, [0, 0, 3]);
    t.same(r.gateway_settings, [0, 1, 0], 'any role now');
    t.same(r.saml_providers, [1, 1, 3]);
    t.same(r.sso_providers, [0, 0, 1], 'provider 2 (only on a deleted record) is gone');
    t.same(r.asset_group_tags, [0, 0, 1]);
    t.same(r.asset_group_tag_selectors, [0, 0, 3]);
    t.same(r.asset_group_members, [1, 0, 4]);
    t.same(r.asset_group_tag_selector_members, [1, 0, 6]);
    const providers = await sql(url, 'SELECT id, sso_provider_id, name FROM saml_providers ORDER BY id');
    t.same(providers, [
      { id: 10, sso_provider_id: 1, name: 'Renamed' },
      { id: 41, sso_provider_id: 4, name: 'provider 4' },
    ]);
    const links = await sql(
      url,
      'SELECT selector_id, member_id FROM asset_group_tag_selector_members ORDER BY 1, 2',
    );
    t.same(links, [
      { selector_id: 3, member_id: 101 },
      { selector_id: 3, member_id: 106 },
    ]);
  });

  t.test('a failing import changes nothing, not even the other file', async (t) => {
    const url = await createSchema(t, database);
    await importStores(t, url, { sso: SSO, tags: TAGS });
    const dir = t.testdir();
    const sso = { ...SSO, providers: [{ ...SSO.providers[0], name: 'Not applied' }] };
    const tags = {
      tags: [{ id: 1, name: 'x', selectors: [selector(1, 1, [], { created_at: 'not a date' })] }],
      members: [],
    };
    writeFileSync(path.join(dir, 'sso.json'), JSON.stringify(sso));
    writeFileSync(path.join(dir, 'tags.json'), JSON.stringify(tags));
    const r = await runCli(runImport, [
      '--postgres',
      url,
      '--sso-providers',
      path.join(dir, 'sso.json'),
      '--asset-group-tags',
      path.join(dir, 'tags.json'),
    ]);
    t.equal(r.code, 1);
    t.match(r.stderr, /gateway import: .*not a date/);
    const names = await sql(url, 'SELECT name FROM saml_providers WHERE id = 10');
    t.same(names, [{ name: 'provider 1' }]);
    t.equal((await sql(url, 'SELECT count(*)::int AS n FROM asset_group_tag_selectors'))[0]?.n, 4);
  });
});
