/**
 * nginx as a reverse proxy to the stub, when an `nginx` binary is on PATH: a temporary nginx.conf
 * (one worker process, like the single-process Node targets; keep-alive connections to the
 * upstream; access log on, as the gateway logs every request), `daemon off`, and every file it
 * writes under the bench's temporary folder.
 */
import { accessSync, constants, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { delimiter, join } from 'node:path';
import { startChild } from './processes.mjs';

/** The nginx binary on PATH, or undefined. */
export function findNginx() {
  const dirs = (process.env.PATH ?? '').split(delimiter).concat(['/usr/sbin', '/usr/local/sbin']);
  for (const dir of dirs) {
    const candidate = join(dir, 'nginx');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** A port free right now (nginx cannot listen on port 0 and tell us which it got). */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function accepts(port) {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Starts nginx in front of `upstreamPort` (its files in `<dir>/<name>`); resolves with the child and its URL. */
export async function startNginx(binary, dir, upstreamPort, name = 'nginx') {
  const root = join(dir, name);
  mkdirSync(join(root, 'tmp'), { recursive: true, mode: 0o755 });
  const port = await freePort();
  const conf = join(root, 'nginx.conf');
  writeFileSync(
    conf,
    `daemon off;
worker_processes 1;
pid ${join(root, 'nginx.pid')};
error_log ${join(root, 'error.log')} warn;
events { worker_connections 1024; }
http {
  access_log ${join(root, 'access.log')};
  client_body_temp_path ${join(root, 'tmp', 'body')};
  proxy_temp_path ${join(root, 'tmp', 'proxy')};
  fastcgi_temp_path ${join(root, 'tmp', 'fastcgi')};
  uwsgi_temp_path ${join(root, 'tmp', 'uwsgi')};
  scgi_temp_path ${join(root, 'tmp', 'scgi')};
  keepalive_requests 100000;
  upstream stub {
    server 127.0.0.1:${upstreamPort};
    keepalive 64;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://stub;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`,
  );
  const entry = await startChild(name, binary, ['-p', `${root}/`, '-c', conf], {
    dir,
    probe: () => accepts(port),
  });
  return { ...entry, url: `http://127.0.0.1:${port}` };
}
