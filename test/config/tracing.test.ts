/** The `tracing` key (contract §10): its defaults, and what it refuses with the key's path. */
import t from 'tap';
import { ConfigError, parseConfig } from '../../src/config/load.js';

const BACKENDS = `backends:
  collectors: { type: local, path: c }
  sso_providers: { type: local, path: s.json }
  asset_group_tags: { type: local, path: a.json }
`;
const parse = (tracing: string) => parseConfig(`${tracing}\n${BACKENDS}`, '/base');
function problems(tracing: string): string {
  try {
    parse(tracing);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.join('\n');
    throw err;
  }
  return '';
}

t.test('absent: tracing is off; present: the endpoint with defaults', async (t) => {
  t.equal(parse('').tracing, undefined);
  t.same(parse('tracing: { otlp_endpoint: "http://127.0.0.1:4318/v1/traces" }').tracing, {
    otlp_endpoint: 'http://127.0.0.1:4318/v1/traces',
    service_name: 'bh-gateway',
    sample_ratio: 1,
  });
  t.equal(
    parse('tracing: { otlp_endpoint: "http://c:4318/v1/traces", sample_ratio: 0.25 }').tracing?.sample_ratio,
    0.25,
  );
});

t.test('refused with the key path', async (t) => {
  t.match(problems('tracing: {}'), /tracing\.otlp_endpoint/);
  t.match(problems('tracing: { otlp_endpoint: "ftp://c/v1/traces" }'), /tracing\.otlp_endpoint/);
  t.match(problems('tracing: { otlp_endpoint: "http://u:p@c/v1/traces" }'), /tracing\.otlp_endpoint/);
  t.match(
    problems('tracing: { otlp_endpoint: "http://c/v1/traces", sample_ratio: 2 }'),
    /tracing\.sample_ratio/,
  );
  t.match(problems('tracing: { otlp_endpoint: "http://c/v1/traces", exporter: grpc }'), /tracing/);
});
