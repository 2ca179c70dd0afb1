/**
 * The TLS session ticket secret over the cluster IPC channel: the primary makes one and gives it to
 * every worker that asks (at its start), so that all derive the same ticket keys (src/tls/tickets.ts)
 * and a session resumes on whichever worker the next connection lands. Each worker mixes in the
 * client trust it loads itself, so once every worker has read a new `client_ca` or `client_crl` none
 * resumes a session verified against the old one.
 */
import cluster, { type Worker } from 'node:cluster';

interface SecretMessage {
  gateway: 'ticket-secret';
  secret?: Uint8Array;
}

/** In the primary: answers each worker's request for `secret`; returns the function that stops. */
export function serveTicketSecret(secret: Buffer): () => void {
  const onMessage = (worker: Worker, msg: Partial<SecretMessage>) => {
    if (msg?.gateway !== 'ticket-secret' || msg.secret !== undefined) return;
    const answer: SecretMessage = { gateway: 'ticket-secret', secret };
    worker.send(answer, () => undefined);
  };
  cluster.on('message', onMessage);
  return () => cluster.off('message', onMessage);
}

/** In a worker: asks the primary for the secret; rejects when no answer comes within `timeout` ms. */
export function askTicketSecret(timeout: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const onMessage = (msg: Partial<SecretMessage>) => {
      if (msg?.gateway !== 'ticket-secret' || msg.secret === undefined) return;
      done();
      resolve(Buffer.from(msg.secret));
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`the cluster primary gave no TLS ticket secret within ${timeout} ms`));
    }, timeout);
    const done = () => {
      clearTimeout(timer);
      process.off('message', onMessage);
    };
    process.on('message', onMessage);
    process.send?.({ gateway: 'ticket-secret' } satisfies SecretMessage);
  });
}
