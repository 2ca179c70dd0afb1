/**
 * An OTLP/HTTP collector that keeps nothing: it reads each export and answers 200 with an empty
 * export response, so that a gateway with tracing on exports as it would to a real collector.
 *
 *   node bench/targets/otlp-sink.mjs
 */
import { createServer } from 'node:http';

const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': 2 });
    res.end('{}');
  });
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ msg: 'listening', port: server.address().port })}\n`);
});
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
});
