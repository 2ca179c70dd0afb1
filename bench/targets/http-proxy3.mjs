/**
 * http-proxy-3 in front of the upstream: what users would run instead of the gateway. A keep-alive
 * `http.Agent` (without one, every request opens a connection) and an error listener (without one,
 * an upstream fault is thrown); everything else is the library's defaults.
 *
 *   node bench/targets/http-proxy3.mjs <upstream-url>
 */
import { Agent, createServer } from 'node:http';
import { ProxyServer } from 'http-proxy-3';

const [upstream] = process.argv.slice(2);
const agent = new Agent({ keepAlive: true, maxSockets: 64 });
const proxy = new ProxyServer({ target: upstream, agent });
proxy.on('error', (_err, _req, res) => {
  // `res` is a socket for WebSocket upgrades, which the bench never sends.
  if (typeof res.writeHead === 'function' && !res.headersSent) res.writeHead(502);
  res.end();
});

const server = createServer((req, res) => proxy.web(req, res));
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ msg: 'listening', port: server.address().port })}\n`);
});
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  agent.destroy();
});
