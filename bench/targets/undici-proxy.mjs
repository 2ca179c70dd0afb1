/**
 * The minimal undici-based forwarding proxy: the floor of any Node proxy hop, written the obvious
 * way. Every request goes to the upstream with `pool.request` on one keep-alive undici `Pool` of 64
 * connections, and the status, headers and body come back with `body.pipe(res)`. Nothing else: no
 * auth, no logging, no metrics.
 *
 *   node bench/targets/undici-proxy.mjs <upstream-url>
 */
import { createServer } from 'node:http';
import { Pool } from 'undici';

const [upstream] = process.argv.slice(2);
const pool = new Pool(upstream, { connections: 64 });

// RFC 9110 §7.6.1: connection-specific headers never cross a proxy (undici refuses some of them too).
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te']);

function forwardable(headers) {
  const out = {};
  for (const name in headers) if (!HOP.has(name) && name !== 'host') out[name] = headers[name];
  return out;
}

const server = createServer((req, res) => {
  const hasBody =
    req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;
  pool.request(
    {
      method: req.method,
      path: req.url,
      headers: forwardable(req.headers),
      body: hasBody ? req : undefined,
    },
    (err, answer) => {
      if (err) {
        res.writeHead(502).end();
        return;
      }
      res.writeHead(answer.statusCode, forwardable(answer.headers));
      answer.body.pipe(res);
    },
  );
});

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ msg: 'listening', port: server.address().port })}\n`);
});
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  pool.close();
});
