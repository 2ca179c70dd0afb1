/**
 * The pipeline as data: each route runs its own list of stages, so a route that needs no
 * credentials (a public route of contract §11) is configuration, not a special case. The real
 * authenticate stage, handler and HTTP server; the operations answer who they were asked by.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { createAuthenticate } from '../src/auth/authenticate.js';
import { BodyReader } from '../src/auth/verified-body.js';
import { createRouteTable } from '../src/http/route-table.js';
import { parseConfig } from '../src/config/load.js';
import { createClientAddressing } from '../src/http/client-address.js';
import { DeadlineClock } from '../src/http/deadline-clock.js';
import { createHandler } from '../src/http/handler.js';
import { sendJson } from '../src/http/respond.js';
import { createLogger } from '../src/observability/logger.js';
import { createMetrics } from '../src/observability/metrics.js';
import type { Operation } from '../src/operations/operation.js';
import { createPipeline } from '../src/pipeline.js';
import { JWT_SECRET } from './helpers/gateway.js';

/** An operation answering 200 with the subject it was run for (`anonymous` without an identity). */
function answering(id: Operation['id'], isPublic: boolean): Operation {
  return {
    id,
    permission: 'passthrough',
    public: isPublic,
    handle: (ctx) => sendJson(ctx, 200, { subject: ctx.identity?.subject ?? 'anonymous' }),
  };
}

/** The real handler on port 0 over a front door whose route `/api/v2/version-of-anything` is public or not. */
async function serve(t: Test, publicRoute: boolean): Promise<string> {
  const config = parseConfig(
    `auth: { jwt: { hs256_secret: "${JWT_SECRET}" } }
backends:
  collectors: { type: local, path: c }
  sso_providers: { type: local, path: s.json }
  asset_group_tags: { type: local, path: a.json }`,
    t.testdir(),
  );
  const metrics = createMetrics();
  const authenticate = createAuthenticate({
    auth: config.auth,
    server: config.server,
    metrics,
    tmpDir: t.testdir(),
  });
  const pipeline = createPipeline({
    prefer: config.prefer,
    clock: new DeadlineClock(),
    authenticate,
    operations: {
      GetCollectorChecksum: answering('GetCollectorChecksum', false),
      UpdateSSOProvider: answering('UpdateSSOProvider', false),
      GetAssetGroupTagMember: answering('GetAssetGroupTagMember', false),
    },
    frontDoor: {
      table: createRouteTable(
        [{ name: 'anything', path: '/api/v2/version-of-anything', auth: publicRoute ? 'none' : 'required' }],
        1024,
      ),
      passthrough: answering('passthrough', false),
      public: answering('public', true),
      limits: { stageOf: () => undefined },
      body: new BodyReader(config.server, t.testdir()),
    },
  });
  const addressing = createClientAddressing(config.server);
  const handler = createHandler({
    logger: createLogger('silent'),
    metrics,
    take: () => ({ pipeline, addressing, release: () => undefined }),
    draining: () => false,
    faulted: () => false,
  });
  const server = createServer(handler).listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => {
    authenticate.close();
    server.closeAllConnections();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

t.test('a public operation answers without credentials; the others still ask for them', async (t) => {
  const base = await serve(t, true);
  const open = await fetch(`${base}/api/v2/version-of-anything`);
  t.equal(open.status, 200);
  t.same(await open.json(), { subject: 'anonymous' });
  t.equal(open.headers.get('preference-applied'), 'wait=30', 'the deadline stage still runs');
  const guarded = await fetch(`${base}/api/v2/asset-group-tags/1/members/101`);
  t.equal(guarded.status, 401);
  t.match(guarded.headers.get('www-authenticate'), /^Bearer realm="api"/);
});

t.test('the same operation, not public, is authenticated and authorized first', async (t) => {
  const base = await serve(t, false);
  const res = await fetch(`${base}/api/v2/version-of-anything`);
  t.equal(res.status, 401);
  t.same(((await res.json()) as { errors: unknown }).errors, [
    { context: 'header:Authorization', message: 'not authenticated' },
  ]);
});
