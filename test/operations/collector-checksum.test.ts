import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { call, errorOf, ROOT, startGateway, type TestResponse, TOKENS } from '../helpers/gateway.js';
import { metric, metricsText } from '../helpers/metrics.js';
import { until } from '../helpers/wait.js';

const target = (type: string, release: string) => `/api/v2/collectors/${type}/${release}/checksum`;
const sample = (type: string, version: string) =>
  readFileSync(path.join(ROOT, 'config', 'collectors', type, `${type}-v${version}.zip.sha256`));
const strongTag = (bytes: Buffer) => `"sha256-${createHash('sha256').update(bytes).digest('base64url')}"`;
const IMMUTABLE = 'private, max-age=31536000, immutable';

t.test('collector checksum', async (t) => {
  const gw = await startGateway();
  t.teardown(() => gw.close());
  const get = (type: string, release: string, headers: Record<string, string> = {}) =>
    call(gw, { method: 'GET', target: target(type, release), token: TOKENS.reader, headers });

  t.test('latest is the highest stable release by semver order', async (t) => {
    for (const type of ['sharphound', 'azurehound']) {
      const res = await get(type, 'latest');
      t.equal(res.status, 200, type);
      t.same(res.body, sample(type, '2.10.0'), `${type}: 2.10.0 over 2.9.0, the rc and the unparsable name`);
      t.equal(res.headers['content-type'], 'application/octet-stream');
      t.equal(res.headers['content-disposition'], `attachment; filename="${type}-v2.10.0.zip.sha256"`);
      t.equal(res.headers['cache-control'], 'private, no-cache');
      t.equal(res.headers.etag, strongTag(res.body));
    }
  });

  t.test('an explicit version, with or without its v', async (t) => {
    for (const tag of ['v2.9.0', '2.9.0']) {
      const res = await get('sharphound', tag);
      t.equal(res.status, 200, tag);
      t.same(res.body, sample('sharphound', '2.9.0'));
      t.equal(res.headers['content-disposition'], 'attachment; filename="sharphound-v2.9.0.zip.sha256"');
      t.equal(res.headers['cache-control'], IMMUTABLE);
      t.equal(res.headers.etag, strongTag(sample('sharphound', '2.9.0')));
    }
  });

  t.test('a pre-release is served when asked for by exact version', async (t) => {
    const res = await get('azurehound', 'v2.11.0-rc.1');
    t.equal(res.status, 200);
    t.same(res.body, sample('azurehound', '2.11.0-rc.1'));
    t.equal(res.headers['content-disposition'], 'attachment; filename="azurehound-v2.11.0-rc.1.zip.sha256"');
  });

  t.test('If-None-Match with the current tag answers 304 with ETag and Cache-Control', async (t) => {
    const tag = strongTag(sample('sharphound', '2.10.0'));
    const cases: Array<[string, string, number]> = [
      ['v2.10.0', tag, 304],
      ['v2.10.0', `W/${tag}`, 304],
      ['v2.10.0', `"other", W/"x" , ${tag}`, 304],
      ['v2.10.0', '*', 304],
      ['latest', tag, 304],
      ['v2.10.0', '"other"', 200],
      ['v2.10.0', `${tag.slice(0, -2)}"`, 200],
      ['v2.9.0', tag, 200],
    ];
    for (const [release, inm, status] of cases) {
      const res = await get('sharphound', release, { 'If-None-Match': inm });
      t.equal(res.status, status, `${release} If-None-Match: ${inm}`);
      t.equal(res.headers.etag, strongTag(sample('sharphound', release === 'v2.9.0' ? '2.9.0' : '2.10.0')));
      t.equal(res.headers['cache-control'], release === 'latest' ? 'private, no-cache' : IMMUTABLE);
      if (status === 304) t.equal(res.body.length, 0, 'no body');
    }
  });

  t.test('HEAD answers the headers of GET and no body', async (t) => {
    for (const release of ['latest', 'v2.9.0']) {
      const full = await get('sharphound', release);
      const head = await call(gw, {
        method: 'HEAD',
        target: target('sharphound', release),
        token: TOKENS.reader,
      });
      t.equal(head.status, 200);
      t.equal(head.body.length, 0);
      for (const h of ['content-type', 'content-disposition', 'content-length', 'etag', 'cache-control']) {
        t.equal(head.headers[h], full.headers[h], h);
      }
    }
  });

  t.test('invalid path parameters are 400 with the literal message and context', async (t) => {
    const invalid: Array<[string, string, string, string]> = [
      ['SharpHound', 'latest', 'path:collector_type', 'Invalid collector type: SharpHound'],
      ['foo', 'latest', 'path:collector_type', 'Invalid collector type: foo'],
      ['foo', 'latest2', 'path:collector_type', 'Invalid collector type: foo'],
    ];
    const tagMessage = 'release tag must be "latest" or a semantic version such as v1.2.3';
    for (const tag of [
      'v01.2.3',
      '1.2',
      'v1.2.3+build',
      'latest2',
      'V1.2.3',
      'vv1.2.3',
      '=1.2.3',
      'v1.2.3-rc.01',
    ]) {
      invalid.push(['sharphound', tag, 'path:release_tag', tagMessage]);
    }
    for (const [type, release, context, message] of invalid) {
      const res = await get(type, release);
      t.equal(res.status, 400, `${type} ${release}`);
      t.same(errorOf(res), { status: 400, context, message });
    }
  });

  t.test('an echoed collector type is bounded and free of control characters', async (t) => {
    const long = 'x'.repeat(100);
    t.equal(errorOf(await get(long, 'latest')).message, `Invalid collector type: ${'x'.repeat(64)}…`);
    t.equal(errorOf(await get('sharp%0Ahound', 'latest')).message, 'Invalid collector type: sharp?hound');
  });

  t.test('an unknown version or a type without releases is 404', async (t) => {
    for (const [type, release] of [
      ['sharphound', 'v9.9.9'],
      ['sharphound', 'v99999999999999999999999.0.0'],
      ['openhound', 'latest'],
      ['openhound', 'v1.0.0'],
    ] as const) {
      const res = await get(type, release);
      t.same(
        errorOf(res),
        { status: 404, context: 'path:release_tag', message: 'resource not found' },
        `${type} ${release}`,
      );
    }
  });

  t.test('a token without collectors:read is refused with 403', async (t) => {
    for (const token of [TOKENS.none, TOKENS.writer]) {
      const res = await call(gw, { method: 'GET', target: target('sharphound', 'latest'), token });
      t.same(errorOf(res), { status: 403, context: 'permission', message: 'not authorized' }, token.subject);
    }
    t.equal(
      (await call(gw, { method: 'GET', target: target('sharphound', 'latest'), token: TOKENS.admin })).status,
      200,
    );
  });

  t.test('within its TTL latest keeps its meaning; repeated reads are cache hits', async (t) => {
    writeFileSync(
      path.join(gw.dataDir, 'collectors', 'azurehound', 'azurehound-v2.12.0.zip.sha256'),
      'new\n',
    );
    const res = await get('azurehound', 'latest');
    t.equal(res.headers['content-disposition'], 'attachment; filename="azurehound-v2.10.0.zip.sha256"');
    const metrics = await metricsText(gw.adminUrl);
    t.ok(
      (metric(metrics, 'gateway_checksum_cache_requests_total', { result: 'hit' }) ?? 0) > 0,
      'hits are counted',
    );
    t.ok((metric(metrics, 'gateway_checksum_cache_bytes') ?? 0) > 0, 'the cache holds bytes');
  });
});

t.test('a release added after start is served as latest once the TTL has passed', async (t) => {
  const gw = await startGateway({ checksum_cache: { latest_ttl: '100ms' } });
  t.teardown(() => gw.close());
  const latest = (): Promise<TestResponse> =>
    call(gw, { method: 'GET', target: target('sharphound', 'latest'), token: TOKENS.reader });
  t.equal(
    (await latest()).headers['content-disposition'],
    'attachment; filename="sharphound-v2.10.0.zip.sha256"',
  );
  const line = `${'c'.repeat(64)}  sharphound-v2.12.0.zip\n`;
  writeFileSync(path.join(gw.dataDir, 'collectors', 'sharphound', 'sharphound-v2.12.0.zip.sha256'), line);
  // Served as latest once the TTL has passed (asked again until it has).
  let res = await latest();
  await until('the new release is served as latest', async () => {
    res = await latest();
    return res.headers['content-disposition'] !== 'attachment; filename="sharphound-v2.10.0.zip.sha256"';
  });
  t.equal(res.status, 200);
  t.equal(res.headers['content-disposition'], 'attachment; filename="sharphound-v2.12.0.zip.sha256"');
  t.equal(res.body.toString(), line);
});
