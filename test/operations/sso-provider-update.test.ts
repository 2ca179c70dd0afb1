import { chmodSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import {
  call,
  errorOf,
  multipart,
  startGateway,
  type TestGateway,
  type TestResponse,
  TOKENS,
  type Tok,
} from '../helpers/gateway.js';

type Part = { name: string; value: string | Buffer; filename?: string; contentType?: string };

const MD = 'urn:oasis:names:tc:SAML:2.0:metadata';
const POST = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST';
const REDIRECT = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';
const metadata = (binding = POST, entity = 'https://idp.new.example.com/') =>
  `<?xml version="1.0"?>\n<EntityDescriptor xmlns="${MD}" entityID="${entity}"><IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"><SingleSignOnService Binding="${binding}" Location="https://idp.new.example.com/sso"/></IDPSSODescriptor></EntityDescriptor>\n`;
const file = (xml: string): Part => ({
  name: 'metadata',
  value: xml,
  filename: 'idp.xml',
  contentType: 'text/xml',
});
const auto = (enabled: string, roleId: string, roleProvision: string): Part[] => [
  { name: 'config.auto_provision.enabled', value: enabled },
  { name: 'config.auto_provision.default_role_id', value: roleId },
  { name: 'config.auto_provision.role_provision', value: roleProvision },
];

function send(
  gw: TestGateway,
  id: string,
  parts: Part[],
  opts: { token?: Tok; contentType?: string; body?: Buffer } = {},
) {
  const form = multipart(parts);
  return call(gw, {
    method: 'PATCH',
    target: `/api/v2/sso-providers/${id}`,
    body: opts.body ?? form.body,
    token: opts.token,
    headers: { 'Content-Type': opts.contentType ?? form.contentType },
  });
}

const storeOf = (gw: TestGateway) => path.join(gw.dataDir, 'sso-providers.json');
const audits = (gw: TestGateway) => gw.logs.filter((l) => l.audit === 'sso_provider_update');

/** Sends a request that must be refused, and checks the answer and that the file did not change. */
async function refused(
  t: Test,
  gw: TestGateway,
  res: Promise<TestResponse>,
  want: { status: number; context: string; message: string | RegExp },
) {
  const before = readFileSync(storeOf(gw));
  const auditsBefore = audits(gw).length;
  const got = errorOf(await res);
  t.equal(got.status, want.status, `status ${want.status}`);
  t.equal(got.context, want.context);
  if (typeof want.message === 'string') t.equal(got.message, want.message);
  else t.match(got.message, want.message);
  t.same(readFileSync(storeOf(gw)), before, 'the file on disk is unchanged');
  t.equal(audits(gw).length, auditsBefore, 'no audit line');
}

t.test('a change through the front door', async (t) => {
  const gw = await startGateway();
  t.teardown(() => gw.close());

  t.test('name, metadata and auto-provisioning are applied, answered and written', async (t) => {
    const started = Date.now();
    const res = await send(gw, '7', [
      { name: 'name', value: '  Corp IdP  ' },
      file(metadata()),
      ...auto('true', '2', 'T'),
    ]);
    t.equal(res.status, 200);
    t.match(res.headers['content-type'], /^application\/json/);
    const { data } = res.json();
    t.same(Object.keys(data).sort(), [
      'config',
      'created_at',
      'deleted_at',
      'display_name',
      'id',
      'idp_issuer_uri',
      'idp_sso_uri',
      'name',
      'principal_attribute_mappings',
      'sp_acs_uri',
      'sp_issuer_uri',
      'sp_metadata_uri',
      'sp_sso_uri',
      'sso_provider_id',
      'updated_at',
    ]);
    t.match(data, {
      id: 3,
      sso_provider_id: { int32: 7, valid: true },
      name: 'Corp IdP',
      display_name: 'Corp IdP',
      idp_issuer_uri: 'https://idp.new.example.com/',
      idp_sso_uri: 'https://idp.new.example.com/sso',
      deleted_at: { time: '0001-01-01T00:00:00Z', valid: false },
      config: { auto_provision: { enabled: true, default_role_id: 2, role_provision: true } },
    });
    t.ok(Date.parse(data.updated_at) >= started - 1000, 'updated_at moved');

    const onDisk = JSON.parse(readFileSync(storeOf(gw), 'utf8')).providers.find(
      (p: { id: number }) => p.id === 3,
    );
    t.equal(onDisk.name, 'Corp IdP');
    t.equal(onDisk.metadata_xml, metadata());
    t.same(onDisk.auto_provision, { enabled: true, default_role_id: 2, role_provision: true });

    const [line] = audits(gw);
    t.match(line, {
      msg: 'sso provider updated',
      request_id: res.headers.requestid,
      subject: 'admin',
      sso_provider_id: 7,
      fields: [
        'name',
        'display_name',
        'idp_issuer_uri',
        'idp_sso_uri',
        'metadata_xml',
        'config.auto_provision.enabled',
        'config.auto_provision.default_role_id',
      ],
    });
  });

  t.test('a form with no parts, or with the same values, changes nothing', async (t) => {
    const before = readFileSync(storeOf(gw));
    const auditsBefore = audits(gw).length;
    for (const parts of [[], [{ name: 'name', value: 'Corp IdP' }, ...auto('1', '+2', 'true')]]) {
      const res = await send(gw, '7', parts);
      t.equal(res.status, 200);
      t.equal(res.json().data.name, 'Corp IdP');
    }
    t.same(readFileSync(storeOf(gw)), before, 'nothing written');
    t.equal(audits(gw).length, auditsBefore, 'no audit line for a no-op');
  });

  t.test('the writer token may update; the reader token may not', async (t) => {
    const res = await send(gw, '1', [{ name: 'name', value: 'Okta prod' }], { token: TOKENS.writer });
    t.equal(res.status, 200);
    t.equal(audits(gw).at(-1)?.subject, 'writer');
    await refused(t, gw, send(gw, '1', [{ name: 'name', value: 'x' }], { token: TOKENS.reader }), {
      status: 403,
      context: 'permission',
      message: 'not authorized',
    });
  });
});

t.test('every refusal, with its message and context, changes nothing', async (t) => {
  const gw = await startGateway({ forms: { max_file_size: 2048 } });
  t.teardown(() => gw.close());
  const name = (value: string | Buffer): Part[] => [{ name: 'name', value }];
  const bad = [{ name: 'bogus', value: 'x' }];
  const cases: Array<[string, () => Promise<TestResponse>, number, string, string | RegExp]> = [
    ['a malformed id', () => send(gw, 'abc', name('x')), 400, 'path:sso_provider_id', 'id is malformed'],
    ['id 0', () => send(gw, '0', name('x')), 400, 'path:sso_provider_id', 'id is malformed'],
    [
      'an id over 32 bits',
      () => send(gw, '2147483648', name('x')),
      400,
      'path:sso_provider_id',
      'id is malformed',
    ],
    [
      'a malformed id before a bad form',
      () => send(gw, '-1', bad),
      400,
      'path:sso_provider_id',
      'id is malformed',
    ],
    ['an unknown id', () => send(gw, '2', name('x')), 404, 'path:sso_provider_id', 'resource not found'],
    [
      'an unknown id before a bad form',
      () => send(gw, '2', bad),
      404,
      'path:sso_provider_id',
      'resource not found',
    ],
    ['a deleted provider', () => send(gw, '9', name('x')), 404, 'path:sso_provider_id', 'resource not found'],
    [
      'a JSON body',
      () => send(gw, '1', [], { contentType: 'application/json', body: Buffer.from('{"name":"x"}') }),
      400,
      'header:Content-Type',
      'Content-Type must be multipart/form-data with a boundary',
    ],
    [
      'no boundary',
      () => send(gw, '1', name('x'), { contentType: 'multipart/form-data' }),
      400,
      'header:Content-Type',
      'Content-Type must be multipart/form-data with a boundary',
    ],
    [
      'an empty body',
      () => send(gw, '1', [], { body: Buffer.alloc(0) }),
      400,
      'body',
      'request body is empty',
    ],
    [
      'a truncated form',
      () => send(gw, '1', [], { body: multipart(name('x')).body.subarray(0, 60) }),
      400,
      'body',
      /^malformed multipart form: /,
    ],
    ['an unknown part', () => send(gw, '1', bad), 400, 'form:bogus', 'unexpected form part "bogus"'],
    [
      'a part sent twice',
      () => send(gw, '1', [...name('a'), ...name('b')]),
      400,
      'form:name',
      'expected only one "name" parameter',
    ],
    [
      'metadata as a text field',
      () => send(gw, '1', [{ name: 'metadata', value: metadata() }]),
      400,
      'form:metadata',
      '"metadata" parameter must be a file with a filename',
    ],
    [
      'the name as a file',
      () => send(gw, '1', [{ name: 'name', value: 'x', filename: 'name.txt' }]),
      400,
      'form:name',
      '"name" parameter must be a text field, not a file',
    ],
    [
      'a name that is not UTF-8',
      () => send(gw, '1', name(Buffer.from([0x4f, 0x6b, 0xff]))),
      400,
      'form:name',
      '"name" parameter must be valid UTF-8 text without NUL characters',
    ],
    [
      'a name with NUL',
      () => send(gw, '1', name('a\u0000b')),
      400,
      'form:name',
      '"name" parameter must be valid UTF-8 text without NUL characters',
    ],
    [
      'a blank name',
      () => send(gw, '1', name('   ')),
      400,
      'form:name',
      '"name" parameter is invalid: must not be empty',
    ],
    [
      'a name of 256 characters',
      () => send(gw, '1', name('é'.repeat(256))),
      400,
      'form:name',
      '"name" parameter is invalid: must be at most 255 characters',
    ],
    [
      'a name with a control character',
      () => send(gw, '1', name('a\tb')),
      400,
      'form:name',
      '"name" parameter is invalid: must not contain control characters',
    ],
    [
      'one auto-provision part alone',
      () => send(gw, '1', [{ name: 'config.auto_provision.enabled', value: 'true' }]),
      400,
      'form:config.auto_provision.default_role_id',
      'form is missing "config.auto_provision.default_role_id" parameter',
    ],
    [
      'auto-provision without role_provision',
      () => send(gw, '1', auto('true', '2', 'true').slice(0, 2)),
      400,
      'form:config.auto_provision.role_provision',
      'form is missing "config.auto_provision.role_provision" parameter',
    ],
    [
      'auto-provision without enabled',
      () => send(gw, '1', auto('true', '2', 'true').slice(1)),
      400,
      'form:config.auto_provision.enabled',
      'form is missing "config.auto_provision.enabled" parameter',
    ],
    [
      'a boolean that is not one',
      () => send(gw, '1', auto('yes', '2', 'true')),
      400,
      'form:config.auto_provision.enabled',
      '"config.auto_provision.enabled" parameter could not be converted to bool',
    ],
    [
      'role_provision that is not a boolean',
      () => send(gw, '1', auto('true', '2', 'TRue')),
      400,
      'form:config.auto_provision.role_provision',
      '"config.auto_provision.role_provision" parameter could not be converted to bool',
    ],
    [
      'a role id that is not an integer',
      () => send(gw, '1', auto('true', '2.5', 'true')),
      400,
      'form:config.auto_provision.default_role_id',
      '"config.auto_provision.default_role_id" parameter could not be converted to int',
    ],
    [
      'a role id beyond 64 bits, which the reference cannot convert',
      () => send(gw, '1', auto('true', '99999999999999999999', 'true')),
      400,
      'form:config.auto_provision.default_role_id',
      '"config.auto_provision.default_role_id" parameter could not be converted to int',
    ],
    ...['0', '-3', '6', '2147483648', '9223372036854775807'].map(
      (id): [string, () => Promise<TestResponse>, number, string, string] => [
        `role id ${id}`,
        () => send(gw, '1', auto('true', id, 'true')),
        400,
        'form:config.auto_provision.default_role_id',
        '"config.auto_provision.default_role_id" parameter is invalid',
      ],
    ),
    [
      'metadata with only a Redirect binding',
      () => send(gw, '1', [file(metadata(REDIRECT))]),
      400,
      'form:metadata',
      'metadata does not have a SSO service that supports HTTP POST binding',
    ],
    [
      'metadata with a DOCTYPE',
      () => send(gw, '1', [file(`<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>${metadata()}`)]),
      400,
      'form:metadata',
      'metadata must not contain a DOCTYPE or entity declaration',
    ],
    [
      'metadata that is not XML',
      () => send(gw, '1', [file('<EntityDescriptor')]),
      400,
      'form:metadata',
      /^metadata is not well-formed XML: /,
    ],
    [
      'metadata that is not SAML',
      () => send(gw, '1', [file('<html/>')]),
      400,
      'form:metadata',
      'metadata is not a SAML 2.0 EntityDescriptor or EntitiesDescriptor',
    ],
    [
      'metadata over forms.max_file_size',
      () => send(gw, '1', [file(`${metadata()}<!--${'x'.repeat(2048)}-->`)]),
      413,
      'form:metadata',
      'form part "metadata" is larger than the limit of 2048 bytes',
    ],
    [
      'a good name with bad metadata',
      () => send(gw, '1', [...name('fine'), file(metadata(REDIRECT))]),
      400,
      'form:metadata',
      'metadata does not have a SSO service that supports HTTP POST binding',
    ],
  ];
  for (const [what, res, status, context, message] of cases) {
    t.test(what, (t) => refused(t, gw, res(), { status, context, message }));
  }
});

t.test('a name is counted in characters, not bytes', async (t) => {
  const gw = await startGateway();
  t.teardown(() => gw.close());
  const res = await send(gw, '1', [{ name: 'name', value: `\t${'é'.repeat(255)} ` }]);
  t.equal(res.status, 200);
  t.equal(res.json().data.name, 'é'.repeat(255), 'trimmed, 255 characters in 510 bytes');
});

t.test('the file keeps the mode it has at each write: an operator chmod after start stays', async (t) => {
  const gw = await startGateway();
  t.teardown(() => gw.close());
  const store = path.join(gw.dataDir, 'sso-providers.json');
  for (const [i, mode] of [0o600, 0o660, 0o640].entries()) {
    chmodSync(store, mode);
    const form = multipart([{ name: 'name', value: `Mode ${i}` }]);
    const res = await call(gw, {
      method: 'PATCH',
      target: '/api/v2/sso-providers/1',
      body: form.body,
      headers: { 'Content-Type': form.contentType },
    });
    t.equal(res.status, 200);
    t.equal(statSync(store).mode & 0o777, mode, `mode ${mode.toString(8)} kept, whatever the umask`);
  }
});

t.test('concurrent uploads, validated a few at a time, are each applied and answered', async (t) => {
  const gw = await startGateway();
  t.teardown(() => gw.close());
  // More uploads than the forms validated at once: the rest wait their turn, none is lost.
  const entities = Array.from({ length: 8 }, (_, i) => `https://idp${i}.example.com/`);
  const answers = await Promise.all(
    entities.map((entity, i) =>
      send(gw, '1', [{ name: 'name', value: `Concurrent ${i}` }, file(metadata(POST, entity))]),
    ),
  );
  for (const [i, res] of answers.entries()) {
    t.equal(res.status, 200, `upload ${i} answered 200`);
    t.equal(res.json().data.idp_issuer_uri, entities[i], `upload ${i} answered with its own metadata`);
  }
  const stored = JSON.parse(readFileSync(storeOf(gw), 'utf8')) as {
    providers: Array<{ id: number; name: string; metadata_xml: string }>;
  };
  const last = stored.providers.find((p) => p.id === 1);
  const which = entities.findIndex((entity) => last?.metadata_xml.includes(`entityID="${entity}"`));
  t.not(which, -1, 'the file holds one of the uploads, whole');
  t.equal(last?.name, `Concurrent ${which}`, 'with the name sent beside that metadata');
  t.equal(audits(gw).length, entities.length, 'one audit line per change');
});
