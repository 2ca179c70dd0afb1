/**
 * The upstream backends against a real stub service on port 0 that checks the gateway's outgoing
 * signature on its own: what goes out, what comes back, and every fault the issue lists.
 */
import { request as httpRequest, type ServerResponse } from 'node:http';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import {
  call,
  errorOf,
  multipart,
  request,
  ROOT,
  signed,
  startGateway,
  TOKENS,
  type TestGateway,
} from '../helpers/gateway.js';
import { startUpstream, upstreamBackend, UPSTREAM_TOKEN_ID, type StubUpstream } from '../helpers/upstream.js';
import { scrape } from '../helpers/metrics.js';
import { until } from '../helpers/wait.js';
import { HELD } from '../../src/upstream/client.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';
const CHECKSUM = '/api/v2/collectors/sharphound/latest/checksum';

async function setup(
  t: Test,
  backends: (stub: StubUpstream) => Record<string, unknown>,
  over: Record<string, unknown> = {},
): Promise<{ stub: StubUpstream; gw: TestGateway }> {
  const stub = await startUpstream();
  const gw = await startGateway({ backends: backends(stub), ...over });
  t.teardown(async () => {
    await gw.close();
    await stub.close();
  });
  return { stub, gw };
}

const members = (stub: StubUpstream, over: Record<string, unknown> = {}) => ({
  asset_group_tags: upstreamBackend(stub, over),
});
const collectors = (stub: StubUpstream, over: Record<string, unknown> = {}) => ({
  collectors: upstreamBackend(stub, over),
});

/**
 * How a member lookup's answer ends for the client: `complete`, or `cut` (an error or a connection
 * closed before its end). `onHead` runs when the answer's head has arrived.
 */
function outcomeOf(gw: TestGateway, extra: Record<string, string> = {}, onHead = () => {}): Promise<string> {
  return new Promise<string>((resolve) => {
    const headers = { ...signed({ method: 'GET', target: MEMBER }), ...extra };
    const req = httpRequest({ port: gw.port, path: MEMBER, headers, agent: false }, (res) => {
      onHead();
      res.on('data', () => undefined);
      res.on('end', () => resolve('complete'));
      res.on('error', () => resolve('cut'));
      res.on('aborted', () => resolve('cut'));
    });
    req.on('error', () => resolve('cut'));
    req.end();
  });
}

/** The gateway still answers through `stub` once it answers again. */
async function stillServes(t: Test, stub: StubUpstream, gw: TestGateway): Promise<void> {
  stub.respond = (_req, res) => {
    res.end('{}');
  };
  t.equal((await call(gw, { method: 'GET', target: MEMBER })).status, 200, 'the gateway still serves');
}

t.test('a member lookup goes out signed over the raw target and comes back unchanged', async (t) => {
  const { stub, gw } = await setup(t, members);
  const body = '{ "data" : {"member": {"id": 101}} }\n';
  stub.respond = (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json', RequestID: 'up-42', 'X-Internal': 'no' });
    res.end(body);
  };
  const target = `${MEMBER}?expand=%41`;
  const res = await call(gw, {
    method: 'GET',
    target,
    token: TOKENS.reader,
    headers: { 'X-Gateway-Subject': 'forged', Prefer: 'wait=20', Host: 'api.example' },
  });
  t.equal(res.status, 200);
  t.equal(res.body.toString(), body, 'the body is the upstream’s, byte for byte');
  t.equal(res.headers['x-upstream-requestid'], 'up-42');
  t.match(res.headers.requestid, /^[0-9a-f-]{36}$/, 'our RequestID stays');
  t.not(res.headers.requestid, 'up-42');
  t.notOk(res.headers['x-internal'], 'only body-describing headers pass');
  t.equal(res.headers['preference-applied'], 'wait=20');

  const seen = stub.seen[0];
  t.ok(seen);
  t.equal(seen?.url, target, 'the target goes out as it came');
  t.equal(seen?.signatureValid, true, 'the upstream verifies the gateway’s own signature');
  t.equal(seen?.headers.authorization, `bhesignature ${UPSTREAM_TOKEN_ID}`);
  t.equal(seen?.headers['x-gateway-subject'], 'reader', 'the identity, never the client’s value');
  t.equal(seen?.headers['x-forwarded-for'], '127.0.0.1');
  t.equal(seen?.headers['x-forwarded-proto'], 'http');
  t.equal(seen?.headers['x-forwarded-host'], 'api.example');
  t.match(seen?.headers.prefer, /^wait=(19|20)$/, 'the seconds left go along');
  const line = gw.logs.find((l) => l.msg === 'request');
  t.equal(line?.upstream_request_id, 'up-42', 'the upstream’s id is in the log line');
  t.equal(
    await scrape(gw.adminUrl, 'gateway_upstream_request_duration_seconds_count', {
      backend: 'asset_group_tags',
    }),
    1,
  );
});

t.test('a HEAD goes out as a HEAD', async (t) => {
  const { stub, gw } = await setup(t, members);
  const res = await call(gw, { method: 'HEAD', target: MEMBER });
  t.equal(res.status, 200);
  t.equal(res.body.length, 0);
  t.equal(stub.seen[0]?.method, 'HEAD');
});

t.test('bearer and client authentication', async (t) => {
  await t.test('bearer sends the configured token', async (t) => {
    const { stub, gw } = await setup(t, (s) =>
      members(s, { auth: { type: 'bearer', token: 'static-upstream-token' } }),
    );
    t.equal((await call(gw, { method: 'GET', target: MEMBER })).status, 200);
    t.equal(stub.seen[0]?.headers.authorization, 'Bearer static-upstream-token');
    t.notOk(stub.seen[0]?.headers.signature);
  });
  await t.test('client forwards the client’s own three headers', async (t) => {
    const { stub, gw } = await setup(t, (s) => members(s, { auth: { type: 'client' } }));
    const headers = signed({ method: 'GET', target: MEMBER });
    t.equal((await request(gw, { method: 'GET', target: MEMBER, headers })).status, 200);
    t.equal(stub.seen[0]?.headers.authorization, headers.Authorization);
    t.equal(stub.seen[0]?.headers.requestdate, headers.RequestDate);
    t.equal(stub.seen[0]?.headers.signature, headers.Signature);
  });
});

t.test(
  'X-Forwarded-* toward the upstream: the client as computed under server.trusted_proxies',
  async (t) => {
    const headers = {
      'X-Forwarded-For': '198.51.100.7, 203.0.113.9',
      'X-Forwarded-Proto': 'https',
      'X-Forwarded-Host': 'api.example.com',
    };
    for (const [server, forFor, proto, host] of [
      // Nobody trusted: the peer is the client, and what it claims is not passed on.
      [{}, '127.0.0.1', 'http', undefined],
      // The peer is a trusted proxy: the rightmost hop it did not vouch for is the client.
      [{ trusted_proxies: ['127.0.0.1/32'] }, '203.0.113.9', 'https', 'api.example.com'],
      [{ trusted_proxies: ['loopback', '203.0.113.0/24'] }, '198.51.100.7', 'https', 'api.example.com'],
      // A trusted list that does not hold the peer: as if nobody were trusted.
      [{ trusted_proxies: ['10.0.0.0/8'] }, '127.0.0.1', 'http', undefined],
      // The deprecated switch: every hop trusted, the leftmost is the client.
      [{ trust_proxy: true }, '198.51.100.7', 'https', 'api.example.com'],
    ] as const) {
      const { stub, gw } = await setup(t, members, { server });
      await call(gw, { method: 'GET', target: MEMBER, headers });
      const seen = stub.seen[0]?.headers;
      const name = JSON.stringify(server);
      t.equal(seen?.['x-forwarded-for'], forFor, `${name}: X-Forwarded-For`);
      t.equal(seen?.['x-forwarded-proto'], proto, `${name}: X-Forwarded-Proto`);
      t.equal(seen?.['x-forwarded-host'], host ?? `127.0.0.1:${gw.port}`, `${name}: X-Forwarded-Host`);
      const line = gw.logs.find((l) => l.msg === 'request');
      t.equal(line?.client, forFor, `${name}: the log line's client`);
    }
  },
);

t.test('the upstream’s own 4xx and 5xx envelopes pass through unchanged', async (t) => {
  const { stub, gw } = await setup(t, members);
  for (const status of [404, 403, 500, 503]) {
    const envelope = `{"http_status":${status},"errors":[{"context":"","message":"from upstream"}]}`;
    stub.respond = (_req, res) => {
      res.writeHead(status, { 'Content-Type': 'application/json', RequestID: 'up-err' });
      res.end(envelope);
    };
    const res = await call(gw, { method: 'GET', target: MEMBER });
    t.equal(res.status, status);
    t.equal(res.body.toString(), envelope);
    t.equal(res.headers['x-upstream-requestid'], 'up-err');
  }
});

t.test('an unreachable upstream is a 502 envelope and /readyz says so', async (t) => {
  const { stub, gw } = await setup(t, members);
  await stub.close();
  const res = await call(gw, { method: 'GET', target: MEMBER });
  t.equal(res.status, 502);
  t.same(errorOf(res), { status: 502, context: 'upstream', message: 'upstream service unavailable' });
  const readyz = await fetch(`${gw.adminUrl}/readyz`);
  t.equal(readyz.status, 503, 'not ready while the upstream is down');
  t.match(await readyz.json(), {
    status: 'not ready',
    checks: { asset_group_tags: 'not ready', collectors: 'ok', sso_providers: 'ok', keys: 'ok' },
  });
  t.equal(
    await scrape(gw.adminUrl, 'gateway_upstream_errors_total', {
      backend: 'asset_group_tags',
      kind: 'connect',
    }),
    1,
  );
});

t.test('/readyz is ready once the upstream answers a probe', async (t) => {
  const { gw } = await setup(t, members);
  let status = 0;
  await until(
    'the gateway is ready',
    async () => (status = (await fetch(`${gw.adminUrl}/readyz`)).status) === 200,
  );
  t.equal(status, 200);
});

t.test('an upstream slower than the deadline: 504 and the upstream request aborted', async (t) => {
  const { stub, gw } = await setup(t, members);
  stub.respond = () => undefined; // never answers
  const res = await call(gw, { method: 'GET', target: MEMBER, headers: { Prefer: 'wait=1' } });
  t.equal(res.status, 504);
  t.same(errorOf(res), { status: 504, context: 'request', message: 'request timed out' });
  await until('the upstream request is aborted', () => stub.seen[0]?.aborted === true);
  t.equal(stub.seen[0]?.aborted, true, 'the upstream saw the request closed');
  t.equal(
    await scrape(gw.adminUrl, 'gateway_deadline_exceeded_total', { operation: 'GetAssetGroupTagMember' }),
    1,
  );
});

t.test(
  'an upstream that resets mid-body, on an answer streamed as it arrives: the client’s answer is cut; nothing crashes',
  async (t) => {
    const { stub, gw } = await setup(t, members);
    // Declared past the 64 KiB held whole: streamed. The upstream resets once the client has the head.
    let reset = () => {};
    stub.respond = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': String(HELD + 1) });
      res.write('{"data":');
      reset = () => res.socket?.destroy();
    };
    t.equal(
      await outcomeOf(gw, {}, () => reset()),
      'cut',
      'a truncated body is never passed off as complete',
    );
    await stillServes(t, stub, gw);
  },
);

t.test(
  'an upstream that resets mid-body, on an answer of at most 64 KiB (read whole first): a 502, nothing sent of it',
  async (t) => {
    const { stub, gw } = await setup(t, members);
    for (const declared of [1000, HELD]) {
      stub.respond = (_req, res) => {
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': String(declared) });
        res.write('{"data":', () => res.socket?.destroy());
      };
      const res = await call(gw, { method: 'GET', target: MEMBER });
      t.equal(res.status, 502, `declared ${declared} bytes`);
      t.equal(errorOf(res).context, 'upstream');
      t.notOk(res.headers['content-length'] === String(declared), 'none of the upstream’s headers went out');
    }
    // An answer of exactly 64 KiB, whole: relayed with its own length.
    const big = Buffer.alloc(HELD, 'a');
    stub.respond = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': String(big.length) });
      res.end(big);
    };
    const whole = await call(gw, { method: 'GET', target: MEMBER });
    t.equal(whole.status, 200);
    t.equal(whole.headers['content-length'], String(HELD));
    t.equal(whole.body.length, HELD);
    await stillServes(t, stub, gw);
  },
);

t.test(
  'a large answer streams through intact, with or without a length, to a reader that pauses',
  async (t) => {
    const { stub, gw } = await setup(t, members);
    // Larger than every buffer on the way: the upstream is paused while the reader is.
    const big = Buffer.alloc(16 * 1024 * 1024);
    for (let i = 0; i < big.length; i++) big[i] = i % 251;
    for (const declared of [true, false]) {
      let sent = false;
      stub.respond = (_req, res) => {
        res.writeHead(200, {
          'Content-Type': 'application/octet-stream',
          ...(declared ? { 'Content-Length': String(big.length) } : {}),
        });
        res.end(big);
        sent = true;
      };
      const received = await new Promise<{ status: number; length?: string; body: Buffer }>(
        (resolve, reject) => {
          const headers = signed({ method: 'GET', target: MEMBER });
          const req = httpRequest({ port: gw.port, path: MEMBER, headers, agent: false }, (res) => {
            const chunks: Buffer[] = [];
            // Reads nothing until the upstream has handed over what it could, then everything.
            res.pause();
            void until('the request is sent', () => sent).then(() => res.resume());
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () =>
              resolve({
                status: res.statusCode ?? 0,
                length: res.headers['content-length'],
                body: Buffer.concat(chunks),
              }),
            );
            res.on('error', reject);
          });
          req.on('error', reject);
          req.end();
        },
      );
      t.equal(received.status, 200, declared ? 'with a length' : 'chunked');
      t.equal(received.length, declared ? String(big.length) : undefined);
      t.ok(received.body.equals(big), 'every byte, in order');
    }
  },
);

t.test('a client gone while a large answer streams: the upstream request is aborted', async (t) => {
  const { stub, gw } = await setup(t, members);
  stub.respond = (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': String(HELD * 4) });
    res.write(Buffer.alloc(HELD)); // and the rest never
  };
  await new Promise<void>((resolve) => {
    const headers = signed({ method: 'GET', target: MEMBER });
    const req = httpRequest({ port: gw.port, path: MEMBER, headers, agent: false }, (res) => {
      res.once('data', () => {
        req.destroy();
        resolve();
      });
    });
    req.on('error', () => undefined);
    req.end();
  });
  await until('the upstream request is aborted', () => stub.seen[0]?.aborted === true);
  t.equal(stub.seen[0]?.aborted, true, 'the upstream saw the request closed');
  await until('the request is logged', () => gw.logs.some((l) => l.msg === 'request'));
  t.equal(gw.logs.find((l) => l.msg === 'request')?.status, 499);
});

t.test(
  'a deadline that passes while a large answer streams: the answer is cut, the upstream request aborted',
  async (t) => {
    const { stub, gw } = await setup(t, members);
    stub.respond = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': String(HELD * 4) });
      res.write(Buffer.alloc(HELD)); // and the rest never
    };
    const outcome = await outcomeOf(gw, { Prefer: 'wait=1' });
    t.equal(outcome, 'cut');
    await until('the upstream request is aborted', () => stub.seen[0]?.aborted === true);
    t.equal(stub.seen[0]?.aborted, true, 'the upstream saw the request closed');
  },
);

t.test(
  'a request waiting for a free upstream connection stops at its deadline and never goes out',
  async (t) => {
    const { stub, gw } = await setup(t, (stub) => members(stub, { connections: 1 }));
    let held: ServerResponse | undefined;
    stub.respond = (_req, res) => {
      held = res; // the first request holds the only connection until the test lets it go
    };
    const first = call(gw, { method: 'GET', target: MEMBER, headers: { Prefer: 'wait=60' } });
    await until('the upstream holds a request', () => held !== undefined);
    const second = await call(gw, {
      method: 'GET',
      target: `${MEMBER}?second`,
      headers: { Prefer: 'wait=1' },
    });
    t.equal(second.status, 504, 'answered at its deadline while still queued');
    t.same(errorOf(second), { status: 504, context: 'request', message: 'request timed out' });
    stub.respond = (_req, res) => {
      res.end('{}');
    };
    held?.end('{}');
    t.equal((await first).status, 200);
    // The connection is free again: a third request goes out on it, the stopped one never does.
    t.equal((await call(gw, { method: 'GET', target: `${MEMBER}?third` })).status, 200);
    t.same(
      stub.seen.map((s) => s.url),
      [MEMBER, `${MEMBER}?third`],
      'the queued request never reached the upstream',
    );
  },
);

t.test('informational answers before the real one are passed over', async (t) => {
  const { stub, gw } = await setup(t, members);
  stub.respond = (_req, res) => {
    res.writeEarlyHints({ link: '</style.css>; rel=preload' }, () => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"data":{}}');
    });
  };
  const res = await call(gw, { method: 'GET', target: MEMBER });
  t.equal(res.status, 200);
  t.equal(res.body.toString(), '{"data":{}}');
});

t.test(
  'a deadline that passes while an answer is read whole: 504 and the upstream connection closed',
  async (t) => {
    const { stub, gw } = await setup(t, members);
    stub.respond = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '100' });
      res.write('{"data":'); // and never the rest
    };
    const res = await call(gw, { method: 'GET', target: MEMBER, headers: { Prefer: 'wait=1' } });
    t.equal(res.status, 504);
    t.same(errorOf(res), { status: 504, context: 'request', message: 'request timed out' });
    await until('the upstream request is aborted', () => stub.seen[0]?.aborted === true);
    t.equal(stub.seen[0]?.aborted, true, 'the upstream saw the request closed');
  },
);

t.test('garbage from the upstream is a 502', async (t) => {
  const { stub, gw } = await setup(t, members);
  stub.respond = (_req, res) => {
    res.socket?.end('NOT HTTP AT ALL\r\n\r\n');
  };
  const res = await call(gw, { method: 'GET', target: MEMBER });
  t.equal(res.status, 502);
  t.equal(errorOf(res).context, 'upstream');
});

t.test('checksums through the upstream: cached, X-Cache, version from Content-Disposition', async (t) => {
  const { stub, gw } = await setup(t, collectors);
  stub.respond = (req, res) => {
    if (req.url?.includes('/v9.9.9/')) {
      res.writeHead(404, { 'Content-Type': 'application/json' });
      res.end('{"errors":[]}');
      return;
    }
    res.writeHead(200, {
      'Content-Type': 'application/octet-stream',
      'Content-Disposition': 'attachment; filename="sharphound-v2.10.0.zip.sha256"',
    });
    res.end('abc123  sharphound-v2.10.0.zip\n');
  };
  const first = await call(gw, { method: 'GET', target: CHECKSUM });
  t.equal(first.status, 200);
  t.equal(first.headers['x-cache'], 'MISS');
  t.equal(first.body.toString(), 'abc123  sharphound-v2.10.0.zip\n');
  t.equal(first.headers['content-disposition'], 'attachment; filename="sharphound-v2.10.0.zip.sha256"');
  t.equal(stub.seen[0]?.signatureValid, true);
  const again = await call(gw, { method: 'GET', target: CHECKSUM });
  t.equal(again.headers['x-cache'], 'HIT');
  const version = await call(gw, { method: 'GET', target: '/api/v2/collectors/sharphound/v2.10.0/checksum' });
  t.equal(version.headers['x-cache'], 'HIT', 'what latest resolved to is cached as that version');
  t.equal(stub.seen.length, 1);
  const unknown = await call(gw, { method: 'GET', target: '/api/v2/collectors/sharphound/v9.9.9/checksum' });
  t.equal(unknown.status, 404, 'the service decides what an unknown version gets');
  t.equal(unknown.body.toString(), '{"errors":[]}', 'its answer passes through as it is');
  t.equal(unknown.headers['x-cache'], undefined);
  const again404 = await call(gw, { method: 'GET', target: '/api/v2/collectors/sharphound/v9.9.9/checksum' });
  t.equal(again404.status, 404);
  t.equal(stub.seen.length, 3, 'only 200s are cached: the 404 was asked for again');
  t.equal(await scrape(gw.adminUrl, 'gateway_checksum_cache_requests_total', { result: 'hit' }), 2);
  t.equal(await scrape(gw.adminUrl, 'gateway_checksum_cache_requests_total', { result: 'miss' }), 3);
});

t.test('50 concurrent cold requests for one checksum make exactly one upstream fetch', async (t) => {
  const { stub, gw } = await setup(t, collectors);
  // The one fetch is answered once the gateway holds all 50 requests.
  stub.respond = async (_req, res) => {
    await until(
      '50 requests are in flight',
      async () => (await scrape(gw.adminUrl, 'gateway_requests_in_flight')) === 50,
    );
    res.writeHead(200, { 'Content-Disposition': 'attachment; filename="sharphound-v2.10.0.zip.sha256"' });
    res.end('sum\n');
  };
  const answers = await Promise.all(
    Array.from({ length: 50 }, () => call(gw, { method: 'GET', target: CHECKSUM })),
  );
  t.same(new Set(answers.map((a) => a.status)), new Set([200]));
  t.equal(stub.seen.length, 1);
  const misses = answers.filter((a) => a.headers['x-cache'] === 'MISS').length;
  const hits = answers.filter((a) => a.headers['x-cache'] === 'HIT').length;
  t.equal(misses + hits, 50, 'each answer says where it came from');
  t.ok(misses > 1, `${misses} requests waited on the one fetch`);
});

t.test('stale-if-error: the last latest keeps serving while the upstream fails', async (t) => {
  const { stub, gw } = await setup(t, collectors, { checksum_cache: { latest_ttl: '50ms' } });
  stub.respond = (_req, res) => {
    res.writeHead(200, { 'Content-Disposition': 'attachment; filename="sharphound-v2.10.0.zip.sha256"' });
    res.end('sum\n');
  };
  t.equal((await call(gw, { method: 'GET', target: CHECKSUM })).status, 200);
  stub.respond = (_req, res) => {
    res.writeHead(500, { 'Content-Type': 'application/json' });
    res.end('{"http_status":500}');
  };
  // Within the TTL the answer is a hit; once it has passed, `latest` is asked again, and fails.
  let stale = await call(gw, { method: 'GET', target: CHECKSUM });
  await until('the upstream is asked for latest again', async () => {
    if (stub.seen.length >= 2) return true;
    stale = await call(gw, { method: 'GET', target: CHECKSUM });
    return false;
  });
  t.equal(stale.status, 200);
  t.equal(stale.body.toString(), 'sum\n');
  t.equal(stale.headers['x-cache'], 'HIT');
  t.equal(await scrape(gw.adminUrl, 'gateway_checksum_cache_requests_total', { result: 'stale' }), 1);
  const version = await call(gw, { method: 'GET', target: '/api/v2/collectors/azurehound/v1.0.0/checksum' });
  t.equal(version.status, 500, 'without an earlier answer, the upstream’s error passes through');
  t.equal(version.body.toString(), '{"http_status":500}');
});

t.test('an oversized checksum answer is a 502, never cached', async (t) => {
  const { stub, gw } = await setup(t, (s) => collectors(s, { max_response_size: 1024 }));
  stub.respond = (_req, res) => {
    res.writeHead(200, { 'Content-Disposition': 'attachment; filename="sharphound-v2.10.0.zip.sha256"' });
    res.end(Buffer.alloc(4096, 'a'));
  };
  const res = await call(gw, { method: 'GET', target: CHECKSUM });
  t.equal(res.status, 502);
  t.same(errorOf(res), {
    status: 502,
    context: 'upstream',
    message: 'upstream service sent an invalid answer',
  });
});

t.test('a client that disconnects aborts the upstream request', async (t) => {
  const { stub, gw } = await setup(t, collectors);
  stub.respond = () => undefined; // never answers
  const headers = signed({ method: 'GET', target: CHECKSUM });
  const req = httpRequest({ port: gw.port, path: CHECKSUM, headers, agent: false });
  req.on('error', () => undefined);
  req.end();
  await until('the upstream receives the request', () => stub.seen.length > 0);
  req.destroy();
  await until('the upstream request is aborted', () => stub.seen[0]?.aborted === true);
  t.equal(stub.seen[0]?.aborted, true);
});

t.test('no socket leaks: after the faults the pool holds at most its connections', async (t) => {
  const { stub, gw } = await setup(t, (s) => members(s, { connections: 4 }));
  let n = 0;
  stub.respond = (_req, res) => {
    n++;
    if (n % 3 === 0) res.socket?.destroy();
    else if (n % 3 === 1) res.end('{}');
    else res.socket?.end('garbage\r\n\r\n');
  };
  await Promise.all(Array.from({ length: 30 }, () => call(gw, { method: 'GET', target: MEMBER })));
  t.ok(stub.connections() <= 4, `${stub.connections()} connections open at the upstream`);
  await gw.close();
  await until('the upstream has no connection left', () => stub.connections() === 0);
  t.equal(stub.connections(), 0, 'closing the gateway closes its pool');
});

t.test('SSO provider PATCH through an upstream', async (t) => {
  const target = '/api/v2/sso-providers/1';
  const metadata = readFileSync(path.join(ROOT, 'config', 'idp-metadata.xml'));
  const { stub, gw } = await setup(t, (s) => ({ sso_providers: upstreamBackend(s) }));
  stub.respond = (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json', RequestID: 'up-sso' });
    res.end('{"data":{"id":1,"name":"renamed"}}');
  };

  const bad = multipart([{ name: 'name', value: '   ' }]);
  const refused = await call(gw, {
    method: 'PATCH',
    target,
    body: bad.body,
    headers: { 'Content-Type': bad.contentType },
  });
  t.equal(refused.status, 400);
  t.equal(stub.seen.length, 0, 'an invalid form never reaches the upstream');
  const unsigned = await request(gw, { method: 'PATCH', target, body: bad.body });
  t.equal(unsigned.status, 401);
  t.equal(stub.seen.length, 0, 'an unauthenticated request never reaches the upstream');

  const form = multipart([
    { name: 'name', value: 'renamed' },
    { name: 'metadata', value: metadata, filename: 'idp.xml', contentType: 'text/xml' },
  ]);
  const res = await call(gw, {
    method: 'PATCH',
    target,
    body: form.body,
    headers: { 'Content-Type': form.contentType },
  });
  t.equal(res.status, 200);
  t.equal(res.body.toString(), '{"data":{"id":1,"name":"renamed"}}');
  const seen = stub.seen[0];
  t.equal(seen?.method, 'PATCH');
  t.equal(seen?.url, target);
  t.same(seen?.body, form.body, 'the same multipart bytes go out');
  t.equal(seen?.headers['content-type'], form.contentType);
  t.equal(seen?.signatureValid, true, 're-signed over the body that went out');
  const audit = gw.logs.find((l) => l.audit === 'sso_provider_update');
  t.same(audit?.fields, ['name', 'display_name', 'idp_issuer_uri', 'idp_sso_uri', 'metadata_xml']);
});

t.test('answers larger than max_response_size stream through; headers a client needs pass', async (t) => {
  const { stub, gw } = await setup(t, (s) => members(s, { max_response_size: 1024 }));
  stub.respond = (_req, res) => {
    res.writeHead(503, { 'Content-Type': 'application/json', 'Retry-After': '7' });
    res.end(Buffer.alloc(64 * 1024, 'a'));
  };
  const res = await call(gw, { method: 'GET', target: MEMBER });
  t.equal(res.status, 503);
  t.equal(res.body.length, 64 * 1024, 'the cap is for checksums, not relayed answers');
  t.equal(res.headers['retry-after'], '7');
});

t.test(
  'a checksum fetch shared by several requests is neutral: canonical target, nobody’s details',
  async (t) => {
    const { stub, gw } = await setup(t, collectors);
    stub.respond = (_req, res) => {
      res.writeHead(200, { 'Content-Disposition': 'attachment; filename="sharphound-v2.10.0.zip.sha256"' });
      res.end('sum\n');
    };
    for (const target of [
      '/api/v2/collectors/sharphound/latest/checksum?client=1',
      '/api/v2/collectors/%73harphound/2.9.0/checksum',
    ]) {
      const res = await call(gw, {
        method: 'GET',
        target,
        headers: { Prefer: 'wait=7', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
      });
      t.equal(res.status, 200, target);
    }
    t.same(
      stub.seen.map((s) => s.url),
      ['/api/v2/collectors/sharphound/latest/checksum', '/api/v2/collectors/sharphound/v2.9.0/checksum'],
      'the canonical target, no query, whatever spelling the client used',
    );
    for (const seen of stub.seen) {
      const h = seen.headers;
      t.notOk(h.prefer, 'no Prefer: nobody’s deadline');
      t.notOk(h['x-request-id'], 'no waiter’s request id');
      t.notOk(h['x-gateway-subject'], 'no waiter’s identity');
      t.notOk(
        h['x-forwarded-for'] ?? h['x-forwarded-proto'] ?? h['x-forwarded-host'],
        'no forwarded headers',
      );
      t.notOk(h.traceparent);
      t.equal(seen.signatureValid, true, 'signed by the gateway over the canonical target');
    }
  },
);

t.test(
  'under client auth the checksum cache is per identity, with the client’s own credentials',
  async (t) => {
    const { stub, gw } = await setup(t, (s) => collectors(s, { auth: { type: 'client' } }));
    stub.respond = (req, res) => {
      res.writeHead(200, { 'Content-Disposition': 'attachment; filename="sharphound-v2.10.0.zip.sha256"' });
      res.end(`sum for ${req.headers.authorization}\n`);
    };
    const admin = await call(gw, { method: 'GET', target: CHECKSUM });
    const again = await call(gw, { method: 'GET', target: CHECKSUM });
    const reader = await call(gw, { method: 'GET', target: CHECKSUM, token: TOKENS.reader });
    t.equal(admin.headers['x-cache'], 'MISS');
    t.equal(again.headers['x-cache'], 'HIT', 'the same identity reads its own entry');
    t.equal(reader.headers['x-cache'], 'MISS', 'another identity never reads it');
    t.match(reader.body.toString(), TOKENS.reader.id, 'its own answer');
    t.equal(stub.seen.length, 2);
    t.equal(stub.seen[1]?.headers.authorization, `bhesignature ${TOKENS.reader.id}`, 'its own credentials');
    t.equal(stub.seen[1]?.url, CHECKSUM, 'the target its signature covers');
    t.notOk(stub.seen[1]?.headers['x-request-id']);
  },
);

t.test('a forwarded PATCH carries its length', async (t) => {
  const { stub, gw } = await setup(t, (s) => ({ sso_providers: upstreamBackend(s) }));
  const form = multipart([{ name: 'name', value: 'renamed' }]);
  await call(gw, {
    method: 'PATCH',
    target: '/api/v2/sso-providers/1',
    body: form.body,
    headers: { 'Content-Type': form.contentType },
  });
  t.equal(stub.seen[0]?.headers['content-length'], String(form.body.length));
  t.notOk(stub.seen[0]?.headers['transfer-encoding']);
});
