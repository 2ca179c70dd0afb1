/** Binding a listener, for the API and admin servers of a process and of a cluster primary. */
import type { Server } from 'node:http';

/** Resolves once `server` listens on `host:port` (port 0: a free one); rejects with the bind error. */
export function listenOn(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
