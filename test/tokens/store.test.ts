/**
 * The token store through the front door: the real gateway on port 0 reading tokens from a real
 * PostgreSQL, managed with the real `gateway tokens` command. Creation, revocation and rotation seen
 * at once, expiry on every request, one 401 for revoked, expired and unknown tokens, the YAML rule,
 * keys never stored in the clear, edited rows refused, and a rotation of the encryption key.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { stringify } from 'yaml';
import { loadConfigFile } from '../../src/config/load.js';
import { encryptionKeyId } from '../../src/tokens/seal.js';
import { baseConfig, errorOf, merge, readyz, type TestGateway, TOKENS } from '../helpers/gateway.js';
import { createDatabase, createSchema, requirePostgres, sql } from '../helpers/postgres.js';
import { metric, metricsText, scrape } from '../helpers/metrics.js';
import {
  createToken,
  ENCRYPTION_KEYS,
  gatewayCli,
  get,
  status,
  storeGateway,
  tokensCli,
  tokenStore,
} from '../helpers/tokens.js';
import { until } from '../helpers/wait.js';

const NOT_FOUND = 'unable to validate request signature for client: resource not found';

/** A gateway whose token store is the schema at `url`; resolves once it has read the store. */
async function gatewayOn(t: Test, url: string, over: Record<string, unknown> = {}): Promise<TestGateway> {
  const gw = await storeGateway(t, url, over);
  await until('the token store is loaded', async () => (await readyz(gw)).status === 200);
  return gw;
}

if (await requirePostgres(t)) {
  const database = await createDatabase(t);

  t.test('created at once; revoked, expired and unknown tokens get one 401, the reason logged', async (t) => {
    const url = await createSchema(t, database);
    const gw = await gatewayOn(t, url);
    const ready = await readyz(gw);
    t.equal(ready.body.checks.token_store, 'ok', '/readyz names the token store');

    const tok = await createToken(gw.configFile, 'ci-bot', 'collectors:read', '--name', 'CI');
    const seen = await until('the new token verifies', async () => (await status(gw, tok)) === 200);
    t.ok(seen < 1000, `a created token verified after ${Math.round(seen)} ms`);
    const log = () => gw.logs.filter((l) => l.msg === 'request' && l.token_id === tok.id).at(-1);
    t.equal(log()?.subject, 'ci-bot');

    const short = await createToken(gw.configFile, 'short', '*', '--expires-in', '2s');
    await until('the short-lived token verifies', async () => (await status(gw, short)) === 200);
    // Nothing changes in the database: the expiry is checked on the request itself.
    await until('the short-lived token expires', async () => (await status(gw, short)) === 401);

    t.equal((await tokensCli(gw.configFile, 'revoke', tok.id)).code, 0);
    const gone = await until('the revoked token is refused', async () => (await status(gw, tok)) === 401);
    t.ok(gone < 1000, `a revoked token was refused after ${Math.round(gone)} ms`);

    const unknown = { ...tok, id: randomUUID() };
    const answers = await Promise.all([get(gw, tok), get(gw, short), get(gw, unknown)]);
    for (const res of answers) {
      t.same(errorOf(res), { status: 401, context: 'header:Authorization', message: NOT_FOUND });
    }
    const reasons = [tok, short, unknown].map(
      (k) => gw.logs.filter((l) => l.token_id === k.id && l.status === 401).at(-1)?.auth_failure,
    );
    t.same(reasons, ['revoked_token', 'expired_token', 'unknown_token'], 'the log tells them apart');
    const text = await metricsText(gw.adminUrl);
    for (const reason of ['revoked_token', 'expired_token', 'unknown_token']) {
      t.ok((metric(text, 'gateway_auth_failures_total', { scheme: 'signature', reason }) ?? 0) >= 1, reason);
    }
    t.equal(metric(text, 'gateway_tokens', { source: 'store' }), 0, 'no store token verifies any more');
    t.equal(metric(text, 'gateway_tokens', { source: 'config' }), Object.keys(TOKENS).length);
    t.ok((metric(text, 'gateway_token_store_reloads_total', { result: 'ok' }) ?? 0) >= 1);
    t.equal(metric(text, 'gateway_token_store_reloads_total', { result: 'error' }), 0);
    t.ok(
      (metric(text, 'gateway_token_store_notify_lag_seconds_count') ?? 0) >= 1,
      'notified changes are timed',
    );
  });

  t.test('during a rotation overlap both keys verify, then only the new one', async (t) => {
    const url = await createSchema(t, database);
    const gw = await gatewayOn(t, url);
    const tok = await createToken(gw.configFile, 'svc');
    await until('the token verifies', async () => (await status(gw, tok)) === 200);

    const rotated = await tokensCli(gw.configFile, 'rotate', tok.id, '--overlap', '3s', '--json');
    t.equal(rotated.code, 0, rotated.stderr);
    const fresh = { ...tok, key: JSON.parse(rotated.stdout).key as string };
    t.not(fresh.key, tok.key);
    await until('the new key verifies', async () => (await status(gw, fresh)) === 200);
    t.equal(await status(gw, tok), 200, 'the old key still verifies during the overlap');
    await until('the overlap ends', async () => (await status(gw, tok)) === 401);
    t.equal(await status(gw, fresh), 200);
    t.equal(
      gw.logs.filter((l) => l.token_id === tok.id && l.status === 401).at(-1)?.auth_failure,
      'digest_mismatch',
    );

    const again = await tokensCli(gw.configFile, 'rotate', tok.id, '--overlap', '0s', '--json');
    const third = { ...tok, key: JSON.parse(again.stdout).key as string };
    await until('the third key verifies', async () => (await status(gw, third)) === 200);
    t.equal(await status(gw, fresh), 401, 'without an overlap the replaced key stops at once');
  });

  t.test(
    "a store token overrides a YAML token with its id, with a warning naming the YAML's path",
    async (t) => {
      const url = await createSchema(t, database);
      const gw = await gatewayOn(t, url);
      t.equal(await status(gw, TOKENS.reader), 200, 'the YAML token verifies');
      const imported = await tokensCli(gw.configFile, 'import');
      t.equal(imported.code, 0, imported.stderr);
      const rotated = await tokensCli(gw.configFile, 'rotate', TOKENS.reader.id, '--overlap', '0s', '--json');
      const stored = { ...TOKENS.reader, key: JSON.parse(rotated.stdout).key as string };
      await until('the store key verifies', async () => (await status(gw, stored)) === 200);
      t.equal(await status(gw, TOKENS.reader), 401, 'the YAML key is ignored');
      const warning = gw.logs.find(
        (l) => l.msg === 'token ignored: the token store holds this id' && l.token_id === TOKENS.reader.id,
      );
      t.equal(warning?.path, 'auth.signature.tokens[1]');
      t.equal(warning?.level, 'warn');

      const checked = await gatewayCli('check-config', gw.configFile, '--resolve');
      t.equal(checked.code, 0);
      t.match(
        checked.stderr,
        `warning: auth.signature.tokens[1]: ignored, the token store holds id ${TOKENS.reader.id}`,
      );
      // `import` brought every YAML token into the store: each is named by its path.
      const warnings = checked.stderr.split('\n').filter((l) => l.includes('warning'));
      t.same(
        warnings.map((l) => /tokens\[(\d)\]/.exec(l)?.[1]),
        ['0', '1', '2', '3'],
      );
    },
  );

  t.test('no column of the token table holds a key, in the clear, base64 or hex', async (t) => {
    const url = await createSchema(t, database);
    const gw = await gatewayOn(t, url);
    const keys: string[] = [];
    for (const subject of ['a', 'b', 'c']) keys.push((await createToken(gw.configFile, subject)).key);
    const overlapped = await createToken(gw.configFile, 'd');
    keys.push(overlapped.key);
    const rotated = await tokensCli(gw.configFile, 'rotate', overlapped.id, '--overlap', '1h', '--json');
    keys.push(JSON.parse(rotated.stdout).key);
    t.equal((await tokensCli(gw.configFile, 'import')).code, 0);
    keys.push(...Object.values(TOKENS).map((k) => k.key));

    const forms = keys.flatMap((key) => {
      const text = Buffer.from(key, 'utf8');
      const raw = Buffer.from(key, 'base64url');
      return [
        key,
        text.toString('base64'),
        text.toString('hex'),
        raw.toString('base64'),
        raw.toString('hex'),
      ];
    });
    const rows = await sql(url, 'SELECT * FROM gateway_tokens');
    t.equal(rows.length, 4 + Object.keys(TOKENS).length);
    t.ok(Object.keys(rows[0] as object).length >= 10, 'every column is read');
    const found: string[] = [];
    for (const row of rows) {
      for (const [column, value] of Object.entries(row)) {
        const texts =
          value instanceof Buffer
            ? [value.toString('latin1'), value.toString('hex'), value.toString('base64')]
            : [JSON.stringify(value)];
        for (const form of forms) {
          if (texts.some((s) => s.toLowerCase().includes(form.toLowerCase())))
            found.push(`${column}: ${form}`);
        }
      }
    }
    // The whole row as PostgreSQL writes it, too (bytea as \x hex).
    for (const { row } of await sql(url, 'SELECT t::text AS row FROM gateway_tokens t')) {
      for (const form of forms)
        if ((row as string).toLowerCase().includes(form.toLowerCase())) found.push(form);
    }
    t.same(found, [], 'no key in any form');
    t.notOk(
      gw.logs.some((l) => forms.some((f) => JSON.stringify(l).includes(f))),
      'no key in any log line either',
    );
  });

  t.test(
    'a row edited in the database no longer decrypts: skipped, logged by id, counted, still ready',
    async (t) => {
      const url = await createSchema(t, database);
      const gw = await gatewayOn(t, url);
      const reader = await createToken(gw.configFile, 'reader', 'collectors:read', '--expires-in', '1d');
      const other = await createToken(gw.configFile, 'other', 'collectors:read');
      await until(
        'both verify',
        async () => (await status(gw, reader)) === 200 && (await status(gw, other)) === 200,
      );

      // Granting itself every permission, or a longer life, by editing the row: the seal no longer opens.
      await sql(url, `UPDATE gateway_tokens SET permissions = '{*}' WHERE id = $1`, [reader.id]);
      await until('the edited token is refused', async () => (await status(gw, reader)) === 401);
      await sql(url, `UPDATE gateway_tokens SET expires_at = now() + interval '10 years' WHERE id = $1`, [
        other.id,
      ]);
      await until('the other edited token is refused', async () => (await status(gw, other)) === 401);

      const skipped = gw.logs.filter((l) => l.msg === 'token does not decrypt; skipped');
      t.same(skipped.map((l) => l.token_id).sort(), [reader.id, other.id].sort(), 'each is logged by its id');
      t.ok(skipped.every((l) => l.why === 'tampered' && Object.keys(l).every((k) => !/key|sealed/.test(k))));
      t.ok(
        ((await scrape(gw.adminUrl, 'gateway_token_store_reloads_total', { result: 'error' })) ?? 0) >= 2,
        'counted',
      );
      const ready = await readyz(gw);
      t.equal(ready.status, 200, 'readiness stays 200');
      t.equal(ready.body.checks.token_store, 'ok');
      t.equal(await status(gw, TOKENS.admin), 200, 'the YAML tokens still verify');

      // A row deleted in the database is gone from every gateway too.
      const third = await createToken(gw.configFile, 'third');
      await until('the third token verifies', async () => (await status(gw, third)) === 200);
      await sql(url, 'DELETE FROM gateway_tokens WHERE id = $1', [third.id]);
      await until('the deleted token is refused', async () => (await status(gw, third)) === 401);
      t.equal(gw.logs.filter((l) => l.token_id === third.id).at(-1)?.auth_failure, 'unknown_token');

      const revoked = await tokensCli(gw.configFile, 'rotate', reader.id);
      t.equal(revoked.code, 1, 'an edited row is not rotated either');
      t.match(revoked.stderr, `token ${reader.id} does not decrypt (tampered)`);
    },
  );

  t.test('the encryption key rotates: previous keys still open rows, reencrypt moves them', async (t) => {
    const url = await createSchema(t, database);
    const [oldKey, newKey] = ENCRYPTION_KEYS;
    const gw = await gatewayOn(t, url);
    const a = await createToken(gw.configFile, 'a');
    const b = await createToken(gw.configFile, 'b');
    const gone = await createToken(gw.configFile, 'gone');
    t.equal((await tokensCli(gw.configFile, 'revoke', gone.id)).code, 0);
    await until('a verifies', async () => (await status(gw, a)) === 200);

    const write = (name: string, store: Record<string, unknown>) => {
      const file = path.join(gw.dataDir, name);
      const config = merge(baseConfig(), { auth: { signature: { token_store: tokenStore(url, store) } } });
      writeFileSync(file, stringify(config));
      return file;
    };
    const rotating = write('rotating.yaml', { encryption_key: newKey, previous_encryption_keys: [oldKey] });
    await gw.app.reload(loadConfigFile(rotating));
    t.equal(await status(gw, a), 200, 'rows sealed under the previous key still open');
    const keyIds = async () =>
      (await sql(url, 'SELECT DISTINCT key_id FROM gateway_tokens')).map((r) => r.key_id);
    const id = (k: string) => encryptionKeyId(Buffer.from(k, 'base64'));
    t.same((await keyIds()).sort(), [id(oldKey), null].sort());

    const moved = await tokensCli(rotating, 'reencrypt');
    t.equal(moved.code, 0, moved.stderr);
    t.equal(moved.stdout, '2 reencrypted, 0 already under the current key\n');
    t.same((await keyIds()).sort(), [id(newKey), null].sort(), 'every live row is under the new key');
    t.equal(
      (await tokensCli(rotating, 'reencrypt')).stdout,
      '0 reencrypted, 2 already under the current key\n',
    );

    const done = write('done.yaml', { encryption_key: newKey });
    await gw.app.reload(loadConfigFile(done));
    await until('the reloaded store is read', async () => (await readyz(gw)).status === 200);
    t.equal(await status(gw, a), 200, 'the old encryption key is no longer needed');
    t.equal(await status(gw, b), 200);
    t.equal(await status(gw, gone), 401);

    // A gateway holding only the old key cannot open the moved rows.
    const stale = write('stale.yaml', { encryption_key: oldKey });
    await gw.app.reload(loadConfigFile(stale));
    await until('the stale store is read', async () => (await readyz(gw)).status === 200);
    t.equal(await status(gw, a), 401);
    const unknownKey = gw.logs.filter(
      (l) => l.msg === 'token does not decrypt; skipped' && l.why === 'unknown_key',
    );
    t.same(unknownKey.map((l) => l.token_id).sort(), [a.id, b.id].sort());
    const failed = await tokensCli(stale, 'reencrypt');
    t.equal(failed.code, 1, 'reencrypt fails on rows it cannot open');
    t.match(failed.stderr, a.id);
  });
}
