/**
 * TLS session ticket keys shared by every process of a gateway, so that a session resumes on any
 * cluster worker. One secret (made by the cluster primary and handed to each worker, or by the
 * process itself when it runs alone) derives the keys of each 12-hour period and of each client
 * trust (the digests of `client_ca` and `client_crl`): every process computes the same keys without
 * talking, they rotate every 12 h, and they change whenever the CA's or the CRL's content does, so a
 * session verified against trust no longer in force never resumes (a reissued CRL costs each client
 * one full handshake).
 */
import { hkdfSync, randomBytes } from 'node:crypto';

/** How long one set of ticket keys is used. */
export const TICKET_PERIOD = 12 * 3_600_000;

export interface TicketKeys {
  /** The 48 bytes of `ticketKeys` for now and the client trust `trustDigest` ('' for none). */
  keys(trustDigest: string): Buffer;
  /** Calls `rotate` at every period boundary until the returned function is called. */
  onRotate(rotate: () => void): () => void;
}

/** A new secret for the ticket keys (the cluster primary's, or a lone process's). */
export function ticketSecret(): Buffer {
  return randomBytes(32);
}

/** The ticket keys derived from `secret`; `now` is injected by tests. */
export function ticketKeys(secret: Buffer, now: () => number = Date.now): TicketKeys {
  return {
    keys(trustDigest) {
      const period = Math.floor(now() / TICKET_PERIOD);
      return Buffer.from(hkdfSync('sha256', secret, trustDigest, `gateway ticket keys ${period}`, 48));
    },
    onRotate(rotate) {
      let timer: NodeJS.Timeout;
      const schedule = () => {
        const wait = TICKET_PERIOD - (now() % TICKET_PERIOD);
        timer = setTimeout(() => {
          rotate();
          schedule();
        }, wait);
        timer.unref();
      };
      schedule();
      return () => clearTimeout(timer);
    },
  };
}
