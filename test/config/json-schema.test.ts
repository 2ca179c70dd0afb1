import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import t from 'tap';
import { parse } from 'yaml';
import { configJsonSchema } from '../../src/config/json-schema.js';
import { parseConfig } from '../../src/config/load.js';
import { ROOT } from '../helpers/gateway.js';
import { node } from '../helpers/node-child.js';

const committed = JSON.parse(readFileSync(path.join(ROOT, 'docs', 'gateway.schema.json'), 'utf8'));
const ajv = new Ajv2020({ allErrors: true, strict: true });
addFormats.default(ajv);
const validate = ajv.compile(committed);

/** The JSON Schema's verdict on YAML text: undefined when valid, else its errors in one line. */
function verdict(text: string): string | undefined {
  return validate(parse(text, { merge: true }))
    ? undefined
    : ajv.errorsText(validate.errors, { separator: '; ' });
}

/** The gateway's own verdict on the same text (references left unresolved, as check-config does). */
function gatewayVerdict(text: string): boolean {
  try {
    parseConfig(text, ROOT, { resolve: false });
    return true;
  } catch {
    return false;
  }
}

const BACKENDS = `backends:
  collectors: { type: local, path: c }
  sso_providers: { type: local, path: s.json }
  asset_group_tags: { type: local, path: a.json }
`;

t.test('the committed schema is the one the gateway derives from its own', async (t) => {
  t.same(committed, configJsonSchema(), 'npm run docs:gen writes docs/gateway.schema.json');
});

t.test('config/gateway.yaml and every example validate against docs/gateway.schema.json', async (t) => {
  const files = [
    'config/gateway.yaml',
    ...readdirSync(path.join(ROOT, 'config', 'examples'))
      .filter((f) => /\.ya?ml$/.test(f))
      .map((f) => `config/examples/${f}`),
  ];
  t.ok(files.length > 1, 'config/examples holds configurations');
  for (const file of files) t.equal(verdict(readFileSync(path.join(ROOT, file), 'utf8')), undefined, file);
});

t.test('config/gateway.yaml names the schema for editors', async (t) => {
  const first = readFileSync(path.join(ROOT, 'config', 'gateway.yaml'), 'utf8').split('\n')[0];
  t.equal(first, '# yaml-language-server: $schema=../docs/gateway.schema.json');
});

t.test('the schema refuses what the gateway refuses, and accepts what it accepts', async (t) => {
  const cases: Array<[string, string, boolean]> = [
    ['a reference for a number', 'server: { port: "${env:PORT}" }', true],
    ['a reference for a duration', 'server: { shutdown_grace: "${file:grace.txt}" }', true],
    ['a duration as seconds and as text', 'server: { shutdown_grace: 30, headers_timeout: 500ms }', true],
    ['a size in units', 'server: { max_body_size: 10MiB }', true],
    ['an unknown key', 'server: { port: 8080, prot: 1 }', false],
    ['a number as text', 'server: { port: "8080" }', false],
    ['a port out of range', 'server: { port: 70000 }', false],
    ['a malformed duration', 'server: { shutdown_grace: 10 minutes }', false],
    ['an unknown level', 'logging: { level: loud }', false],
    ['an unknown permission', 'auth: { jwt: { default_permissions: [everything] } }', false],
    ['an unknown backend type', 'backends: { collectors: { type: s3 } }', false],
    ['a reference standing for an object', 'auth: "${env:AUTH}"', false],
    ['a malformed reference', 'server: { port: "${env:PORT" }', false],
  ];
  for (const [what, yaml, valid] of cases) {
    const text = yaml.startsWith('backends') ? yaml : `${yaml}\n${BACKENDS}`;
    const schema = verdict(text);
    t.equal(schema === undefined, valid, `${what}: the JSON Schema ${schema ?? 'accepts it'}`);
    t.equal(gatewayVerdict(text), valid, `${what}: the gateway agrees`);
  }
});

t.test('gateway schema prints the committed schema', async (t) => {
  const out = await new Promise<string>((resolve, reject) =>
    execFile(...node([path.join(ROOT, 'dist', 'cli.js'), 'schema']), (err, stdout) =>
      err ? reject(err) : resolve(stdout),
    ),
  );
  t.same(JSON.parse(out), committed);
});
