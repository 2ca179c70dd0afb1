/**
 * `gateway tokens` as users run it (the real dist/cli.js): every command on a real database, exit
 * codes 0 and 1, the `--json` shapes, `d` durations, import's skip and `--force`, and a key printed
 * only by create and rotate. Usage mistakes: tokens-usage.test.ts.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import { baseConfig, merge, TOKENS } from '../helpers/gateway.js';
import { createDatabase, createSchema, requirePostgres, sql } from '../helpers/postgres.js';
import { gatewayCli, tokensCli, tokenStore } from '../helpers/tokens.js';

const ISSUED_KEYS = ['id', 'key', 'subject', 'permissions', 'name', 'expires_at'];
const LISTED_KEYS = [
  'id',
  'name',
  'subject',
  'permissions',
  'created_at',
  'expires_at',
  'last_used_at',
  'revoked_at',
];
const DAY = 86_400_000;

function writeConfig(dir: string, name: string, signature: Record<string, unknown>): string {
  const file = path.join(dir, name);
  writeFileSync(file, stringify(merge(baseConfig(), { auth: { signature } })));
  return file;
}

if (await requirePostgres(t)) {
  const database = await createDatabase(t);

  t.test('create, rotate, list, revoke, import and reencrypt: exit codes and --json', async (t) => {
    const url = await createSchema(t, database);
    const file = writeConfig(t.testdir(), 'g.yaml', {
      tokens: Object.values(TOKENS),
      token_store: tokenStore(url),
    });
    const printed: string[] = [];
    const run = async (...argv: string[]) => {
      const r = await gatewayCli('tokens', argv[0] as string, '--config', file, ...argv.slice(1));
      printed.push(`${argv[0]}: ${r.stdout}${r.stderr}`);
      return r;
    };
    // The error paths through the same function in this process (each real command is a node start).
    const quick = async (...argv: string[]) => {
      const r = await tokensCli(file, argv[0] as string, ...argv.slice(1));
      printed.push(`${argv[0]}: ${r.stdout}${r.stderr}`);
      return r;
    };

    const created = await run(
      'create',
      '--subject',
      'ci',
      '--permissions',
      'collectors:read,asset_group_tags:read',
      '--name',
      'CI bot',
      '--expires-in',
      '90d',
      '--json',
    );
    t.equal(created.code, 0, created.stderr);
    const token = JSON.parse(created.stdout);
    t.same(Object.keys(token), ISSUED_KEYS, 'the --json shape');
    t.match(token, {
      id: /^[0-9a-f-]{36}$/,
      key: /^[A-Za-z0-9_-]{43}$/,
      subject: 'ci',
      permissions: ['collectors:read', 'asset_group_tags:read'],
      name: 'CI bot',
    });
    const expiresIn = Date.parse(token.expires_at) - Date.now();
    t.ok(expiresIn > 90 * DAY - 60_000 && expiresIn <= 90 * DAY, '90d is ninety days');

    const plain = await run('create', '--subject', 'plain', '--permissions', '*');
    t.equal(plain.code, 0);
    const [, plainId, plainKey] = /^id: (\S+)\nkey: (\S+)\n$/.exec(plain.stdout) ?? [];
    t.ok(plainId && plainKey, 'text output: id and key');
    t.match(plain.stderr, /shown this once/);

    const rotated = await run('rotate', token.id, '--overlap', '1d', '--json');
    t.equal(rotated.code, 0, rotated.stderr);
    const again = JSON.parse(rotated.stdout);
    t.same(Object.keys(again), ISSUED_KEYS);
    t.same({ ...again, key: undefined }, { ...token, key: undefined }, 'the same token');
    t.not(again.key, token.key, 'with a new key');
    const until = Date.parse(/verifies until (\S+)/.exec(rotated.stderr)?.[1] ?? '');
    t.ok(Math.abs(until - Date.now() - DAY) < 60_000, 'the overlap of 1d is a day');

    t.equal((await run('revoke', plainId as string)).stdout, `revoked ${plainId}\n`);
    const twice = await quick('revoke', plainId as string);
    t.equal(twice.code, 0, 'revoking again changes nothing');
    t.match(twice.stdout, `${plainId} was already revoked at `);
    t.match((await quick('rotate', plainId as string)).stderr, `token ${plainId} is revoked`);
    const unknown = '00000000-0000-4000-8000-000000000000';
    for (const command of ['rotate', 'revoke']) {
      const r = await quick(command, unknown);
      t.equal(r.code, 1, `${command} of an unknown id`);
      t.match(r.stderr, `no token ${unknown} in the store`);
    }

    const first = await run('import');
    t.equal(first.code, 0);
    t.match(first.stdout, /4 imported, 0 replaced, 0 skipped/);
    const second = await quick('import');
    t.match(second.stdout, /0 imported, 0 replaced, 4 skipped/);
    t.match(second.stdout, `skipped ${TOKENS.admin.id} (already in the store; --force replaces it)`);
    t.match((await run('import', '--force')).stdout, /0 imported, 4 replaced, 0 skipped/);

    const listed = await run('list', '--json');
    t.equal(listed.code, 0);
    const rows = JSON.parse(listed.stdout) as Array<Record<string, unknown>>;
    t.equal(rows.length, 6);
    t.ok(
      rows.every((r) => JSON.stringify(Object.keys(r)) === JSON.stringify(LISTED_KEYS)),
      'the list shape',
    );
    t.match(
      rows.find((r) => r.id === plainId),
      { revoked_at: String, last_used_at: null },
    );
    const table = await quick('list');
    t.match(
      table.stdout,
      /^id\s+name\s+subject\s+permissions\s+created_at\s+expires_at\s+last_used_at\s+revoked_at\n/,
    );
    t.match(table.stdout, /CI bot\s+ci\s+collectors:read,asset_group_tags:read/);

    const moved = await run('reencrypt');
    t.equal(moved.code, 0);
    t.equal(moved.stdout, '0 reencrypted, 5 already under the current key\n');

    // Only create and rotate ever printed a key.
    const keys = [token.key, again.key, plainKey as string, ...Object.values(TOKENS).map((k) => k.key)];
    const leaks = printed.filter(
      (out) => !/^(create|rotate): /.test(out) && keys.some((k) => out.includes(k)),
    );
    t.same(leaks, [], 'no other command prints a key');
    t.equal(printed.filter((out) => keys.some((k) => out.includes(k))).length, 3);
    t.equal((await sql(url, 'SELECT count(*)::int AS n FROM gateway_tokens'))[0]?.n, 6);
  });
}
