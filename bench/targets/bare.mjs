/**
 * The bare `node:http` server (the ceiling): the same bytes the gateway answers for the member,
 * written the obvious way, `writeHead` with `Content-Length`, then `end(body)`. Nothing else.
 *
 *   node bench/targets/bare.mjs <body-file> <content-type>
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

const [bodyFile, type] = process.argv.slice(2);
const body = readFileSync(bodyFile);

const server = createServer((req, res) => {
  res.writeHead(200, { 'Content-Type': type, 'Content-Length': body.length });
  res.end(body);
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ msg: 'listening', port: server.address().port })}\n`);
});
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
});
