/* global process */
/**
 * Test-only: one replica of the service behind the gateway, in a process of its own (started by
 * `replicas.ts` with an IPC channel). It listens on `REPLICA_PORT` (0: any), tells its parent
 * `{listening: port}`, then `{received: {method, url, prefer}}` for each request (the health path
 * aside), and takes `{mode}` and `{health}` orders, each acknowledged with `{ack: n}`. Modes: `answer`
 * (200 `{"from": name}`), a status number, `hang` (never answers; `release` answers the held ones),
 * `reset` (cuts the connection), `reset-mid-body` (cuts it once a body chunk arrived), `garbage`,
 * `refuse` (stops listening: the port refuses) and `listen` (listens again on the same port).
 */
import { createServer } from 'node:http';

const name = process.env.REPLICA_NAME ?? 'replica';
let mode = 'answer';
let health = 200;
const held = [];
const sockets = new Set();

const answer = (res) => {
  res.writeHead(200, { 'content-type': 'application/json', requestid: `${name}-id` });
  res.end(JSON.stringify({ from: name }));
};

const server = createServer((req, res) => {
  if (req.url === '/health') {
    req.resume();
    if (health !== 0) res.writeHead(health).end();
    return;
  }
  process.send({ received: { method: req.method, url: req.url, prefer: req.headers.prefer ?? null } });
  if (mode === 'reset') {
    req.socket.destroy();
    return;
  }
  if (mode === 'reset-mid-body') {
    req.once('data', () => req.socket.destroy());
    return;
  }
  req.resume();
  if (mode === 'hang') {
    held.push(res);
    return;
  }
  if (mode === 'garbage') {
    req.socket.end('this is not HTTP\r\n\r\n');
    return;
  }
  if (typeof mode === 'number') {
    req.on('end', () => {
      res.writeHead(mode, { 'content-type': 'text/plain' });
      res.end(`answered ${mode}`);
    });
    return;
  }
  req.on('end', () => answer(res));
});
server.keepAliveTimeout = 60_000;
server.on('connection', (socket) => {
  sockets.add(socket);
  socket.once('close', () => sockets.delete(socket));
});

let port = Number(process.env.REPLICA_PORT ?? 0);
const listen = (then) =>
  server.listen(port, '127.0.0.1', () => {
    port = server.address().port;
    then();
  });

process.on('message', (order) => {
  const done = () => process.send({ ack: order.n });
  if (order.health !== undefined) health = order.health;
  if (order.release) for (const res of held.splice(0)) answer(res);
  if (order.mode === 'refuse') {
    server.close(done);
    for (const s of sockets) s.destroy();
    return;
  }
  if (order.mode === 'listen') {
    listen(done);
    return;
  }
  if (order.mode !== undefined) mode = order.mode;
  done();
});
// The replica ends with its parent (the IPC channel closes).
process.on('disconnect', () => process.exit(0));
listen(() => process.send({ listening: port }));
