/**
 * The stub upstream and the bare `node:http` server (the ceiling): one script, so that both answer
 * the very same bytes with the very same headers. Run as its own process:
 *
 *   node bench/targets/origin.mjs <member-body-file> <member-content-type> <checksum-file>
 *
 * A member path answers the member JSON (the gateway's own local answer, fetched once by the
 * bench), and so does the API description (`GET /api/v2/spec`, a public route of the front door); a checksum path answers the checksum file as the reference service does; an SSO provider
 * PATCH is drained and answered 200 (the workers mode points its sso_providers backend here).
 * Every answer carries a `RequestID`, as the reference service's do. Logs one JSON line
 * `{"msg":"listening","port":N}` on stdout once it listens (port 0: a free one).
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { basename } from 'node:path';

const [memberFile, memberType, checksumFile] = process.argv.slice(2);
const member = readFileSync(memberFile);
const checksum = readFileSync(checksumFile);
// `sharphound-v2.10.0.zip.sha256`: the upstream names the version it served this way.
const checksumName = basename(checksumFile);
const notFound = Buffer.from('{"errors":[{"context":"","message":"resource not found"}]}');

const MEMBER = /^\/api\/v2\/asset-group-tags\/\d+\/members\/\d+(?:\?|$)/;
const CHECKSUM = /^\/api\/v2\/collectors\/[^/]+\/[^/]+\/checksum(?:\?|$)/;
const PUBLIC = '/api/v2/spec';

function send(res, status, type, body, extra) {
  res.writeHead(status, {
    'Content-Type': type,
    'Content-Length': body.length,
    RequestID: randomUUID(),
    ...extra,
  });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}

const server = createServer((req, res) => {
  if (req.method === 'PATCH') {
    req.resume();
    req.on('end', () => send(res, 200, 'application/json', Buffer.from('{"data":{}}')));
    return;
  }
  if (MEMBER.test(req.url) || req.url === PUBLIC) return send(res, 200, memberType, member);
  if (CHECKSUM.test(req.url)) {
    return send(res, 200, 'application/octet-stream', checksum, {
      'Content-Disposition': `attachment; filename="${checksumName}"`,
    });
  }
  send(res, 404, 'application/json', notFound);
});

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ msg: 'listening', port: server.address().port })}\n`);
});
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
});
