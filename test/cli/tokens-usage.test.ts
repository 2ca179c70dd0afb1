/**
 * `gateway tokens` as users run it (the real dist/cli.js): usage mistakes exit 2 before any
 * database is touched, failures exit 1 with the reason and never the database URL.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import { runTokens } from '../../src/cli/tokens.js';
import { baseConfig, merge, TOKENS } from '../helpers/gateway.js';
import { gatewayCli, tokenStore } from '../helpers/tokens.js';

/** How many of the usage cases run as a real command. */
const SPAWNED = 4;

async function inProcess(argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runTokens(argv, { stdout: (s) => (stdout += s), stderr: (s) => (stderr += s), env: {} });
  return { code, stdout, stderr };
}

function writeConfig(dir: string, name: string, signature: Record<string, unknown>): string {
  const file = path.join(dir, name);
  writeFileSync(file, stringify(merge(baseConfig(), { auth: { signature } })));
  return file;
}

t.test('usage mistakes exit 2 with the usage, before any database is touched', async (t) => {
  const dir = t.testdir();
  // A store nobody listens on: a usage check that reached it would exit 1, not 2.
  const file = writeConfig(dir, 'g.yaml', { token_store: tokenStore('postgres://u:s3cret@127.0.0.1:1/x') });
  const id = TOKENS.admin.id;
  const cases: Array<[string[], RegExp]> = [
    [[], /a command is required/],
    [['bogus', '--config', file], /unknown command "bogus"/],
    [['list'], /--config FILE is required/],
    [['create', '--config', file, '--permissions', '*'], /--subject S is required/],
    [['create', '--config', file, '--subject', 's'], /--permissions P\[,P\.\.\.\] is required/],
    [['create', '--config', file, '--subject', 's', '--permissions', 'root'], /unknown permission root/],
    [
      ['create', '--config', file, '--subject', 's', '--permissions', '*', '--expires-in', '3w'],
      /--expires-in must be a duration/,
    ],
    [
      ['create', '--config', file, '--subject', 's', '--permissions', '*', '--expires-in', '0d'],
      /--expires-in must be a duration/,
    ],
    [
      ['create', '--config', file, '--subject', 's', '--permissions', '*', '--overlap', '1h'],
      /--overlap is not an option of "tokens create"/,
    ],
    [['rotate', '--config', file], /takes one token ID/],
    [['rotate', 'not-a-uuid', '--config', file], /token ID must be a UUID/],
    [['rotate', id, '--config', file, '--overlap', 'soon'], /--overlap must be a duration/],
    [['revoke', id, id, '--config', file], /takes one token ID/],
    [['list', 'extra', '--config', file], /unexpected argument "extra"/],
    [['list', '--config', file, '--nope'], /Unknown option '--nope'/],
    [['reencrypt', '--config', file, '--json'], /--json is not an option of "tokens reencrypt"/],
  ];
  // The first few through dist/cli.js (each is a node start), the rest through the same function in
  // this process.
  const ran = [
    ...(await Promise.all(cases.slice(0, SPAWNED).map(([argv]) => gatewayCli('tokens', ...argv)))),
  ];
  for (const [argv] of cases.slice(SPAWNED)) ran.push(await inProcess(argv));
  for (const [i, [argv, message]] of cases.entries()) {
    const r = ran[i]!;
    t.equal(r.code, 2, argv.join(' '));
    t.match(r.stderr, message);
    t.match(r.stderr, /usage: gateway tokens COMMAND --config FILE/);
    t.notMatch(r.stderr, /s3cret/);
  }
  const help = await gatewayCli('tokens', '--help');
  t.equal(help.code, 0);
  t.match(help.stdout, /^usage: gateway tokens/);
});

t.test('failures exit 1 with the reason, never the URL or its password', async (t) => {
  const dir = t.testdir();
  const none = writeConfig(dir, 'none.yaml', {});
  const down = writeConfig(dir, 'down.yaml', {
    token_store: tokenStore('postgres://u:s3cret@127.0.0.1:1/x'),
  });
  const [noStore, missing, r] = await Promise.all([
    gatewayCli('tokens', 'list', '--config', none),
    gatewayCli('tokens', 'list', '--config', path.join(dir, 'missing.yaml')),
    gatewayCli('tokens', 'list', '--config', down),
  ]);
  t.equal(noStore.code, 1);
  t.match(noStore.stderr, /configures no auth\.signature\.token_store/);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /missing\.yaml: cannot be read/);
  t.equal(r.code, 1);
  t.match(r.stderr, /^gateway tokens list: connect ECONNREFUSED/);
  t.notMatch(r.stderr, /s3cret/);

  // check-config --resolve cannot compare ids with a store it cannot reach: a warning, still exit 0.
  const withYaml = writeConfig(dir, 'yaml.yaml', {
    tokens: [TOKENS.admin],
    token_store: tokenStore('postgres://u:s3cret@127.0.0.1:1/x'),
  });
  const checked = await gatewayCli('check-config', withYaml, '--resolve');
  t.equal(checked.code, 0);
  t.match(
    checked.stderr,
    /warning: auth\.signature\.token_store: the store could not be read to compare token ids/,
  );
  t.notMatch(checked.stderr, /s3cret/);
});
