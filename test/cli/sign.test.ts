import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import busboy from 'busboy';
import t from 'tap';
import { signatureOf as computeSignature } from '../../src/signing/chain.js';
import { parseRequestDate } from '../../src/signing/request-date.js';
import { runSign } from '../../src/cli/sign.js';

const ID = '5f0c3b8e-1d2a-4c7e-9b1f-0a1b2c3d4e5f';
const KEY = 'a-very-secret-token-key';
const DATE = '2024-01-01T10:15:00Z';

async function sign(argv: string[], env: Record<string, string | undefined> = {}) {
  let stdout = '';
  let stderr = '';
  const code = await runSign(argv, { stdout: (s) => (stdout += s), stderr: (s) => (stderr += s), env });
  const headers = Object.fromEntries(
    stdout
      .split('\n')
      .filter((l) => l.includes(': '))
      .map((l) => [l.slice(0, l.indexOf(': ')), l.slice(l.indexOf(': ') + 2)]),
  );
  return { code, stdout, stderr, headers };
}

const base = [
  '--token-id',
  ID,
  '--method',
  'GET',
  '--uri',
  '/api/v2/collectors/sharphound/latest/checksum?x=1',
];

t.test('prints the three headers, and the signature verifies', async (t) => {
  const r = await sign([...base, '--token-key', KEY, '--date', DATE]);
  t.equal(r.code, 0);
  t.same(r.headers, {
    Authorization: `bhesignature ${ID}`,
    RequestDate: DATE,
    Signature: computeSignature(KEY, 'GET', '/api/v2/collectors/sharphound/latest/checksum?x=1', DATE),
  });
  t.equal(r.stdout.split('\n').length, 4, 'three lines');
  t.notMatch(r.stdout, KEY);
});

t.test('the date defaults to now, in UTC with second precision', async (t) => {
  const before = Math.floor(Date.now() / 1000) * 1000;
  const r = await sign(base, { GATEWAY_TOKEN_KEY: KEY });
  t.equal(r.code, 0);
  t.match(r.headers.RequestDate, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
  t.ok(parseRequestDate(r.headers.RequestDate).at >= before);
});

t.test('the key comes from a file (trailing newline dropped) or the environment', async (t) => {
  const dir = t.testdir({ key: `${KEY}\n` });
  const expected = computeSignature(KEY, 'GET', base[5] as string, DATE);
  const fromFile = await sign([...base, '--date', DATE, '--token-key-file', path.join(dir, 'key')], {
    GATEWAY_TOKEN_KEY: 'other',
  });
  t.equal(fromFile.headers.Signature, expected);
  const fromEnv = await sign([...base, '--date', DATE], { GATEWAY_TOKEN_KEY: KEY });
  t.equal(fromEnv.headers.Signature, expected);
});

t.test('a body file is signed as its bytes; the scheme word can be chosen', async (t) => {
  const dir = t.testdir({ 'body.json': '{"name":"x"}' });
  const r = await sign([
    ...['--token-id', ID, '--token-key', 'test-key', '--method', 'PATCH', '--uri', '/api/v2/sso-providers/7'],
    ...[
      '--date',
      '2024-01-01T10:59:59+02:00',
      '--body',
      path.join(dir, 'body.json'),
      '--scheme',
      'svcsignature',
    ],
  ]);
  t.equal(r.headers.Signature, 'cSYOFDrTDsNQ7Nr1ATFxsOPuQmmSyImpsasv0UdjWfU=', 'the contract test vector');
  t.equal(r.headers.Authorization, `svcsignature ${ID}`);
});

t.test('a form is written to --out as multipart, signed over those exact bytes', async (t) => {
  const xml = '<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata"/>';
  const dir = t.testdir({ 'idp.xml': xml, 'logo.png': 'PNG' });
  const out = path.join(dir, 'body');
  const r = await sign([
    ...[
      '--token-id',
      ID,
      '--token-key',
      KEY,
      '--method',
      'PATCH',
      '--uri',
      '/api/v2/sso-providers/7',
      '--date',
      DATE,
    ],
    ...['--form', 'name=My IdP = new', '--form', 'config.auto_provision.enabled=true', '--out', out],
    ...['--file', `metadata=@${path.join(dir, 'idp.xml')}`, '--file', `other=@${path.join(dir, 'logo.png')}`],
  ]);
  t.equal(r.code, 0, r.stderr);
  const body = readFileSync(out);
  t.equal(r.headers.Signature, computeSignature(KEY, 'PATCH', '/api/v2/sso-providers/7', DATE, body));
  t.match(r.headers['Content-Type'], /^multipart\/form-data; boundary=\S+$/);

  const fields: Record<string, string> = {};
  const files: Record<string, { filename: string; mimeType: string; data: string }> = {};
  await new Promise<void>((resolve, reject) => {
    const bb = busboy({ headers: { 'content-type': r.headers['Content-Type'] } });
    bb.on('field', (name, value) => (fields[name] = value));
    bb.on('file', (name, stream, info) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        files[name] = {
          filename: info.filename ?? '',
          mimeType: info.mimeType,
          data: Buffer.concat(chunks).toString(),
        };
      });
    });
    bb.on('close', resolve).on('error', reject);
    Readable.from([body]).pipe(bb);
  });
  t.same(fields, { name: 'My IdP = new', 'config.auto_provision.enabled': 'true' });
  t.same(files, {
    metadata: { filename: 'idp.xml', mimeType: 'text/xml', data: xml },
    other: { filename: 'logo.png', mimeType: 'application/octet-stream', data: 'PNG' },
  });
});

t.test('usage errors go to stderr with exit 2, and never echo the key', async (t) => {
  const dir = t.testdir({ 'a.xml': '<x/>' });
  const cases: Array<[string, string[], RegExp]> = [
    ['no token id', ['--method', 'GET', '--uri', '/x', '--token-key', KEY], /--token-id is required/],
    ['bad token id', ['--token-id', 'nope', '--method', 'GET', '--uri', '/x', '--token-key', KEY], /UUID/],
    ['no method', ['--token-id', ID, '--uri', '/x', '--token-key', KEY], /--method is required/],
    ['bad method', ['--token-id', ID, '--method', 'G T', '--uri', '/x', '--token-key', KEY], /HTTP method/],
    ['no uri', ['--token-id', ID, '--method', 'GET', '--token-key', KEY], /--uri is required/],
    ['relative uri', [...base.slice(0, 4), '--uri', 'api/v2', '--token-key', KEY], /starting with/],
    ['bad scheme', [...base, '--token-key', KEY, '--scheme', 'a b'], /single word/],
    ['no key', base, /token key is required/],
    ['two keys', [...base, '--token-key', KEY, '--token-key-file', 'f'], /not both/],
    ['bad date', [...base, '--token-key', KEY, '--date', '2024-01-01'], /RFC 3339/],
    [
      'body and form',
      [...base, '--token-key', KEY, '--body', 'b', '--form', 'a=b', '--out', 'o'],
      /cannot be combined/,
    ],
    ['form without out', [...base, '--token-key', KEY, '--form', 'a=b'], /--out is required/],
    ['out without form', [...base, '--token-key', KEY, '--out', 'o'], /only used with/],
    ['form without =', [...base, '--token-key', KEY, '--form', 'ab', '--out', 'o'], /name=value/],
    ['quote in name', [...base, '--token-key', KEY, '--form', 'a"b=c', '--out', 'o'], /name=value/],
    ['file without @', [...base, '--token-key', KEY, '--file', `m=${dir}/a.xml`, '--out', 'o'], /name=@path/],
    ['unknown option', [...base, '--token-key', KEY, '--nope'], /Unknown option '--nope'/],
    ['stray argument', [...base, KEY], /unexpected argument/],
  ];
  for (const [name, argv, message] of cases) {
    const r = await sign(argv);
    t.equal(r.code, 2, name);
    t.match(r.stderr, message, name);
    t.match(r.stderr, /usage: gateway sign/, name);
    t.notMatch(r.stderr + r.stdout, KEY, `${name}: key not echoed`);
    t.equal(r.stdout, '', `${name}: nothing on stdout`);
  }
});

t.test('a file that cannot be read is exit 1 with its path', async (t) => {
  const dir = t.testdir();
  const r = await sign([...base, '--token-key', KEY, '--body', path.join(dir, 'missing')]);
  t.equal(r.code, 1);
  t.match(r.stderr, /missing: ENOENT/);
  writeFileSync(path.join(dir, 'k'), '');
  const empty = await sign([...base, '--token-key-file', path.join(dir, 'k')]);
  t.equal(empty.code, 2, 'an empty key file');
});

t.test('--help prints the usage', async (t) => {
  const r = await sign(['--help']);
  t.equal(r.code, 0);
  t.match(r.stdout, /usage: gateway sign/);
});
