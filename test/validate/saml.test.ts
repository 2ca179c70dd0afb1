import t, { type Test } from 'tap';
import { GatewayError } from '../../src/errors.js';
import { parseSamlMetadata } from '../../src/validate/saml.js';

const MD = 'urn:oasis:names:tc:SAML:2.0:metadata';
const POST = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST';
const REDIRECT = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';

const idp = (bindings: string[], prefix = 'md:') =>
  `<${prefix}IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">` +
  bindings
    .map(
      (b, i) => `<${prefix}SingleSignOnService Binding="${b}" Location="https://idp.example.com/sso/${i}"/>`,
    )
    .join('') +
  `</${prefix}IDPSSODescriptor>`;

const entity = (body: string, id = 'https://idp.example.com/metadata') =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<md:EntityDescriptor xmlns:md="${MD}" entityID="${id}">${body}</md:EntityDescriptor>`;

function parse(xml: string | Buffer) {
  return parseSamlMetadata(typeof xml === 'string' ? Buffer.from(xml) : xml);
}

function refused(t: Test, xml: string | Buffer, message: RegExp | string, name: string) {
  t.test(name, async (t) => {
    let caught: unknown;
    try {
      parse(xml);
    } catch (err) {
      caught = err;
    }
    t.type(caught, GatewayError);
    const err = caught as GatewayError;
    t.equal(err.status, 400);
    t.equal(err.context, 'form:metadata');
    if (typeof message === 'string') t.equal(err.message, message);
    else t.match(err.message, message);
  });
}

t.test('a prefixed EntityDescriptor gives its entityID and the HTTP-POST location', async (t) => {
  const doc = entity(idp([REDIRECT, POST]));
  t.same(parse(doc), {
    idpIssuerUri: 'https://idp.example.com/metadata',
    idpSsoUri: 'https://idp.example.com/sso/1',
    text: doc,
  });
});

t.test('the default namespace works as well as a prefix', async (t) => {
  const xml = `<EntityDescriptor xmlns="${MD}" entityID="urn:idp">${idp([POST], '')}</EntityDescriptor>`;
  t.same(parse(xml), { idpIssuerUri: 'urn:idp', idpSsoUri: 'https://idp.example.com/sso/0', text: xml });
});

t.test('any prefix name is accepted', async (t) => {
  const xml = `<saml:EntityDescriptor xmlns:saml="${MD}" entityID="urn:idp">${idp([POST], 'saml:')}</saml:EntityDescriptor>`;
  t.equal(parse(xml).idpIssuerUri, 'urn:idp');
});

t.test(
  'an EntitiesDescriptor uses its first entity, depth first, that has an IDPSSODescriptor',
  async (t) => {
    const sp = `<md:EntityDescriptor entityID="urn:sp"><md:SPSSODescriptor protocolSupportEnumeration="x"/></md:EntityDescriptor>`;
    const first = `<md:EntityDescriptor entityID="urn:first">${idp([POST])}</md:EntityDescriptor>`;
    const second = `<md:EntityDescriptor entityID="urn:second">${idp([POST])}</md:EntityDescriptor>`;
    const xml = `<md:EntitiesDescriptor xmlns:md="${MD}">${sp}<md:EntitiesDescriptor>${first}</md:EntitiesDescriptor>${second}</md:EntitiesDescriptor>`;
    t.equal(parse(xml).idpIssuerUri, 'urn:first');
  },
);

t.test('a UTF-8 byte order mark and comments are fine', async (t) => {
  const xml = Buffer.concat([
    Buffer.from([0xef, 0xbb, 0xbf]),
    Buffer.from(`<!-- idp -->${entity(idp([POST])).slice(39)}`),
  ]);
  t.equal(parse(xml).idpSsoUri, 'https://idp.example.com/sso/0');
});

refused(
  t,
  entity(idp([POST])).replace(`xmlns:md="${MD}"`, 'xmlns:md="urn:oasis:names:tc:SAML:1.0:metadata"'),
  'metadata is not a SAML 2.0 EntityDescriptor or EntitiesDescriptor',
  'another namespace is not SAML 2.0 metadata',
);
refused(
  t,
  `<EntityDescriptor entityID="urn:idp">${idp([POST], '')}</EntityDescriptor>`,
  'metadata is not a SAML 2.0 EntityDescriptor or EntitiesDescriptor',
  'no namespace at all is not SAML 2.0 metadata',
);
refused(
  t,
  entity('<md:SPSSODescriptor protocolSupportEnumeration="x"/>'),
  'metadata does not have a SSO service that supports HTTP POST binding',
  'an entity without an IDPSSODescriptor is refused',
);
refused(
  t,
  `<md:EntitiesDescriptor xmlns:md="${MD}"><md:EntityDescriptor entityID="urn:sp"/></md:EntitiesDescriptor>`,
  'metadata does not have a SSO service that supports HTTP POST binding',
  'an EntitiesDescriptor without an identity provider is refused',
);
refused(
  t,
  entity(idp([REDIRECT])),
  'metadata does not have a SSO service that supports HTTP POST binding',
  'only a Redirect binding is refused',
);
refused(
  t,
  entity(
    `<md:IDPSSODescriptor protocolSupportEnumeration="x"><x:SingleSignOnService xmlns:x="urn:other" Binding="${POST}" Location="https://idp.example.com/sso"/></md:IDPSSODescriptor>`,
  ),
  'metadata does not have a SSO service that supports HTTP POST binding',
  'a SingleSignOnService in another namespace does not count',
);
refused(
  t,
  entity(idp([POST]), ''),
  'metadata is missing the entityID attribute',
  'an empty entityID is refused',
);
refused(
  t,
  entity(idp([POST]).replace(/ Location="[^"]*"/, '')),
  'metadata is missing the Location attribute',
  'a POST service without a Location is refused',
);

const laughs =
  '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">' +
  Array.from(
    { length: 9 },
    (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i === 0 ? '' : i};`.repeat(10)}">`,
  ).join('') +
  `]><md:EntityDescriptor xmlns:md="${MD}" entityID="&lol9;">${idp([POST])}</md:EntityDescriptor>`;
const DOCTYPE = 'metadata must not contain a DOCTYPE or entity declaration';

refused(t, laughs, DOCTYPE, 'a billion laughs document is refused');
t.test('the billion laughs document is refused fast', async (t) => {
  const started = performance.now();
  t.throws(() => parse(laughs));
  t.ok(performance.now() - started < 200, 'well under a second');
});
refused(
  t,
  `<?xml version="1.0"?><!DOCTYPE md:EntityDescriptor [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>${entity(idp([POST]), '&xxe;').slice(39)}`,
  DOCTYPE,
  'an external entity (XXE) is refused',
);
refused(
  t,
  `<!DOCTYPE md:EntityDescriptor>${entity(idp([POST])).slice(39)}`,
  DOCTYPE,
  'a bare DOCTYPE is refused',
);
refused(
  t,
  entity(idp([POST]), '&undefined;'),
  /^metadata is not well-formed XML: undefined entity at line 2/,
  'an undefined entity is malformed',
);
refused(
  t,
  entity(idp([POST])).replace('</md:EntityDescriptor>', ''),
  /^metadata is not well-formed XML: unclosed tag at line \d+, column \d+$/,
  'an unclosed root is malformed and the tag is not echoed',
);
refused(
  t,
  `${entity(idp([POST]))}<second/>`,
  /^metadata is not well-formed XML: /,
  'two roots are malformed',
);
refused(t, '', /^metadata is not well-formed XML: /, 'an empty document is malformed');
refused(t, 'not xml at all', /^metadata is not well-formed XML: /, 'text is malformed');
refused(
  t,
  Buffer.concat([Buffer.from(entity(idp([POST])).slice(0, 60)), Buffer.from([0xc3, 0x28])]),
  'metadata is not well-formed XML: not valid UTF-8',
  'invalid UTF-8 is malformed',
);
refused(
  t,
  `<md:EntityDescriptor xmlns:md="${MD}" entityID="a"><q:x>secret-looking</q:x></md:EntityDescriptor>`,
  /^metadata is not well-formed XML: unbound namespace prefix at line 1, column \d+$/,
  'an unbound prefix is malformed without echo',
);

const nested = (depth: number) =>
  entity(
    `<md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"><md:Extensions>` +
      '<a>'.repeat(depth) +
      '</a>'.repeat(depth) +
      `</md:Extensions><md:SingleSignOnService Binding="${POST}" Location="https://idp.example.com/sso"/></md:IDPSSODescriptor>`,
  );
t.test('nesting up to the depth limit is accepted', async (t) => {
  // EntityDescriptor, IDPSSODescriptor and Extensions hold 3 levels.
  t.equal(parse(nested(97)).idpSsoUri, 'https://idp.example.com/sso');
});
refused(t, nested(98), 'metadata nests elements more than 100 deep', 'nesting past the limit is refused');
refused(
  t,
  nested(50_000),
  'metadata nests elements more than 100 deep',
  'a deeply nested document is refused',
);
refused(
  t,
  entity(idp([` ${POST}`])),
  'metadata does not have a SSO service that supports HTTP POST binding',
  'the binding is compared exactly, not trimmed',
);
