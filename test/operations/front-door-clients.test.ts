/**
 * Real clients of the service through the front door (contract §11): what the service's documented
 * Python example client sends, replayed byte for byte in its form, and a command-line login that
 * then uses the session token the service returned.
 */
import { createHmac } from 'node:crypto';
import { SignJWT } from 'jose';
import t from 'tap';
import { JWT_SECRET, request, TOKENS } from '../helpers/gateway.js';
import { frontDoor, lineOf } from '../helpers/front-door.js';

/**
 * `RequestDate` as the Python example writes it: `datetime.datetime.now().astimezone().isoformat('T')`,
 * local time with microseconds and the local offset (here a fixed +02:00 zone).
 */
function pythonRequestDate(at = Date.now()): string {
  const local = new Date(at + 2 * 3_600_000);
  const micros = String(local.getUTCMilliseconds() * 1000 + 123).padStart(6, '0');
  return `${local.toISOString().slice(0, 19)}.${micros}+02:00`;
}

/** The example's signature: the HMAC chain over method + URI, the date's first 13 characters, the body. */
function pythonSignature(key: string, method: string, uri: string, date: string, body?: Buffer): string {
  let digest = createHmac('sha256', key).update(`${method}${uri}`).digest();
  digest = createHmac('sha256', digest).update(date.slice(0, 13)).digest();
  const last = createHmac('sha256', digest);
  if (body !== undefined) last.update(body);
  return last.digest('base64');
}

/** The headers the example's `_request` sends for a GET without a body. */
function pythonHeaders(tokenId: string, key: string, uri: string): Record<string, string> {
  const date = pythonRequestDate();
  return {
    'User-Agent': 'bhe-python-sdk 0001',
    Authorization: `bhesignature ${tokenId}`,
    RequestDate: date,
    Signature: pythonSignature(key, 'GET', uri, date),
    'Content-Type': 'application/json',
  };
}

t.test('the Python example client: GET /api/version, then the member lookup', async (t) => {
  const token = { ...TOKENS.reader, permissions: ['asset_group_tags:read'] };
  const { gw, service } = await frontDoor(t);
  service.respond = (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end('{"data":{"API":{"current_version":"v2","deprecated_version":"v1"},"server_version":"v7.0.0"}}');
  };
  const version = await request(gw, {
    method: 'GET',
    target: '/api/version',
    headers: pythonHeaders(token.id, token.key, '/api/version'),
  });
  t.equal(version.status, 200);
  t.equal(version.json().data.server_version, 'v7.0.0', "main() finds 'data'");
  const seen = service.seen[0];
  t.equal(seen?.headers['user-agent'], 'bhe-python-sdk 0001');
  t.equal(seen?.headers['content-type'], 'application/json');
  t.equal(seen?.headers.authorization, `bhesignature ${token.id}`, 'client auth: its own signature goes on');
  const line = await lineOf(gw, version);
  t.equal(line.route, 'version');
  t.equal(line.token_id, token.id);
  t.equal(line.user_agent, 'bhe-python-sdk 0001');

  const uri = '/api/v2/asset-group-tags/1/members/101';
  const member = await request(gw, {
    method: 'GET',
    target: uri,
    headers: pythonHeaders(token.id, token.key, uri),
  });
  t.equal(member.status, 200);
  t.equal(member.json().data.member.id, 101, 'the operation, answered by the gateway');
  t.equal(service.seen.length, 1);
});

t.test('a command-line login, then the service’s own session token on /api/v2/self', async (t) => {
  const { gw, service } = await frontDoor(t, {
    gateway: { auth: { jwt: { default_permissions: ['passthrough'] } } },
  });
  const session = await new SignJWT({ sub: 'e2a5bb4e-3b2f-4c55-9f3b-56b6b3d4c2a1', sid: 'session-9' })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuedAt()
    .setExpirationTime('8h')
    .sign(Buffer.from(JWT_SECRET, 'base64'));
  service.respond = (req, res, seen) => {
    if (req.url === '/api/v2/login') {
      const asked = JSON.parse(seen.body.toString()) as { username?: string };
      res.writeHead(200, { 'Content-Type': 'application/json', 'Set-Cookie': `token=${session}; Path=/` });
      res.end(
        JSON.stringify({ data: { user_id: asked.username, auth_expired: false, session_token: session } }),
      );
      return;
    }
    res.writeHead(req.headers.authorization === `Bearer ${session}` ? 200 : 401, {
      'Content-Type': 'application/json',
    });
    res.end('{"data":{"principal_name":"alice"}}');
  };
  const login = await request(gw, {
    method: 'POST',
    target: '/api/v2/login',
    headers: { 'Content-Type': 'application/json' },
    body: '{"login_method":"secret","username":"alice","secret":"pw"}',
  });
  t.equal(login.status, 200);
  t.equal(login.headers['set-cookie']?.[0], `token=${session}; Path=/`);
  const token = login.json().data.session_token as string;
  const self = await request(gw, {
    method: 'GET',
    target: '/api/v2/self',
    headers: { Authorization: `Bearer ${token}` },
  });
  t.equal(self.status, 200, 'verified at the gateway with the service’s secret, judged by the service');
  t.equal(self.json().data.principal_name, 'alice');
  t.equal(service.seen[1]?.headers.authorization, `Bearer ${token}`);
  t.equal(service.seen[1]?.headers['x-gateway-subject'], 'e2a5bb4e-3b2f-4c55-9f3b-56b6b3d4c2a1');
  const line = await lineOf(gw, self);
  t.equal(line.route, 'passthrough');
  t.equal(line.auth_scheme, 'bearer');
  const forged = await request(gw, {
    method: 'GET',
    target: '/api/v2/self',
    headers: { Authorization: `Bearer ${token.slice(0, -2)}xx` },
  });
  t.equal(forged.status, 401, 'a token the service did not sign stops at the gateway');
  t.equal(service.seen.length, 2);
});
