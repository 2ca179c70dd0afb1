/**
 * Which connections were verified against the client trust in force (contract §8, "Resumed sessions
 * and changed trust"). Each content of `client_ca` and `client_crl` is a generation; a connection
 * belongs to the generation of the secure context it was accepted with (a connection accepted just
 * before a change and shaken hands just after still used the old CA and CRL). When the trust
 * changes, every open connection whose client presented a certificate under an older generation is
 * handed to the retirers (which close it once its in-flight request ends), and its certificate
 * identifies nobody from then on.
 */
import type { Socket } from 'node:net';
import type { Server as TlsServer, TLSSocket } from 'node:tls';

/** What the rest of the gateway asks of the client trust. */
export interface ClientTrust {
  /** Whether `socket`'s handshake was judged against the client trust in force now. */
  current(socket: Socket): boolean;
  /**
   * Calls `retire` with each connection whose client certificate was judged against trust that is
   * no longer in force (at the change, or at once for one shaken hands with it since); returns the
   * function that stops.
   */
  onStale(retire: (socket: TLSSocket) => void): () => void;
}

/** The generations of one listener's client trust; the listener reports each change. */
export class TrustGenerations implements ClientTrust {
  #digest: string;
  #generation = 0;
  /** The generation each secure context of the server was made with. */
  readonly #contexts = new WeakMap<object, number>();
  /** Open connections and the generation of each. */
  readonly #sockets = new Map<TLSSocket, number>();
  readonly #retirers = new Set<(socket: TLSSocket) => void>();

  constructor(digest: string) {
    this.#digest = digest;
  }

  /** Follows `server`'s connections from now on (before it listens). */
  attach(server: TlsServer): void {
    this.#stamp(server);
    server.on('secureConnection', (socket: TLSSocket) => {
      const context = acceptedWith(socket);
      const made = (context && this.#contexts.get(context)) ?? this.#generation;
      this.#sockets.set(socket, made);
      socket.once('close', () => this.#sockets.delete(socket));
      if (made !== this.#generation) this.#retire(socket);
    });
  }

  /**
   * `server` has just taken a secure context for the trust `digest`: a new digest starts a
   * generation and retires the connections of older ones.
   */
  update(server: TlsServer, digest: string): void {
    const changed = digest !== this.#digest;
    if (changed) {
      this.#digest = digest;
      this.#generation++;
    }
    this.#stamp(server);
    if (!changed) return;
    for (const [socket, made] of this.#sockets) if (made !== this.#generation) this.#retire(socket);
  }

  current(socket: Socket): boolean {
    return this.#sockets.get(socket as TLSSocket) === this.#generation;
  }

  onStale(retire: (socket: TLSSocket) => void): () => void {
    this.#retirers.add(retire);
    return () => this.#retirers.delete(retire);
  }

  /** Records that new connections of `server` are accepted under the current generation. */
  #stamp(server: TlsServer): void {
    const context = contextOf(server);
    if (context !== undefined) this.#contexts.set(context, this.#generation);
  }

  /** Hands `socket` to the retirers if its client presented a certificate (others hold no identity). */
  #retire(socket: TLSSocket): void {
    if (socket.destroyed || socket.getPeerX509Certificate() === undefined) return;
    for (const retire of this.#retirers) retire(socket);
  }
}

/**
 * The secure context new connections of `server` are accepted with. Node keeps it, and the one each
 * connection was accepted with, in fields it does not document; without them every connection counts
 * as accepted at its handshake.
 */
function contextOf(server: TlsServer): object | undefined {
  return (server as { _sharedCreds?: object })._sharedCreds;
}

function acceptedWith(socket: TLSSocket): object | undefined {
  return (socket as { _tlsOptions?: { secureContext?: object } })._tlsOptions?.secureContext;
}
