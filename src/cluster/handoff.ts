/**
 * The connections the primary hands to one worker. Under node:cluster's round-robin scheduling (its
 * default but on Windows) the primary accepts each connection, passes its handle to a worker, and
 * closes its own copy only when the worker answers that it took it. A worker killed in between never
 * answers, and node:cluster keeps that copy for ever: the client's connection stays open with nobody
 * to read it, until the client gives up. This watches the hand-offs to one worker and closes the
 * copies still unanswered once the worker is gone, so that such a client sees its connection closed
 * at once and can retry.
 *
 * node:cluster offers no event for this; a hand-off is its internal message `{cmd: 'NODE_CLUSTER',
 * act: 'newconn', seq}` sent with the handle, answered by `{cmd: 'NODE_CLUSTER', ack: seq}`. Were
 * Node to change them, nothing is tracked and the behaviour is node:cluster's own again.
 */
import type { Worker } from 'node:cluster';

interface ClusterMessage {
  cmd: 'NODE_CLUSTER';
  act?: string;
  seq?: number;
  ack?: number;
}

const isClusterMessage = (msg: unknown): msg is ClusterMessage =>
  typeof msg === 'object' && msg !== null && (msg as { cmd?: unknown }).cmd === 'NODE_CLUSTER';

/**
 * Watches the connections handed to `worker` and closes those it had not taken when it is gone;
 * `handedOff` is called right after each hand-off.
 */
export function watchHandoffs(worker: Worker, handedOff?: () => void): void {
  const child = worker.process;
  const held = new Map<number, { close(): void }>();
  const send = child.send.bind(child) as (...args: unknown[]) => boolean;
  child.send = ((message: unknown, handle?: unknown, ...rest: unknown[]) => {
    const handoff =
      isClusterMessage(message) && message.act === 'newconn' && typeof message.seq === 'number' && !!handle;
    if (handoff) held.set(message.seq!, handle as { close(): void });
    const sent = send(message, handle, ...rest);
    if (handoff) handedOff?.();
    return sent;
  }) as typeof child.send;
  child.on('internalMessage', (message: unknown) => {
    if (isClusterMessage(message) && typeof message.ack === 'number') held.delete(message.ack);
  });
  // `close` comes once the process has exited and its channel is read to its end: no answer can
  // still be on its way, and node:cluster will close none of these.
  child.once('close', () => {
    for (const handle of held.values()) handle.close();
    held.clear();
  });
}
