/**
 * One request to an upstream and its answer, as an undici dispatch handler (`Dispatcher.dispatch`,
 * undici's documented handler API). It does what `pool.request` does for the gateway and no more:
 * an answer that declares at most `HELD` bytes is gathered whole and handed over complete, with no
 * stream made for it; a larger or undeclared one is handed over at its head with a body that streams
 * (paused while the reader is full). The request's `StopSignal` aborts it at any point.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { StopSignal } from './stop-signal.js';
import { errors } from '../errors.js';
import { relayableStatus } from './answer.js';

/**
 * The most bytes of an answer's declared body that are read whole before it is handed over (an
 * answer of this API is a small JSON document; nginx buffers answers the same way by default).
 */
export const HELD = 64 * 1024;

/** An upstream's answer: its status, headers and body (whole, or still streaming). */
export interface Arrived {
  readonly statusCode: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer | Readable;
}

/** How a dispatch reports: the answer or the failure (raw: the caller translates it), and when. */
export interface DispatchHooks {
  /** undici is about to write the request on a connected socket: from now on, bytes of it went out. */
  written?(): void;
  /** The answer's head arrived, with a status that may be relayed. */
  head(): void;
  /** The answer, once it may be handed over. */
  resolve(answer: Arrived): void;
  /**
   * A failure before the answer was handed over: undici's error, a bad status, or the signal's
   * reason; `beforeHead` when no acceptable head had arrived yet.
   */
  reject(err: unknown, beforeHead: boolean): void;
}

type Controller = Dispatcher.DispatchController;

/** The dispatch handler of one request; `method` tells it when an answer has no body (`HEAD`). */
export class DispatchHandler implements Dispatcher.DispatchHandler {
  #controller: Controller | undefined;
  #settled = false;
  #head = false;
  #status = 0;
  #headers: IncomingHttpHeaders = {};
  /** Chunks of an answer gathered whole; undefined while streaming or before the head. */
  #chunks: Buffer[] | undefined;
  #stream: Readable | undefined;
  readonly #signal: StopSignal;
  readonly #hooks: DispatchHooks;
  readonly #bodiless: boolean;
  readonly #onAbort = () => this.#abort(this.#signal.reason);

  constructor(method: string, signal: StopSignal, hooks: DispatchHooks) {
    this.#signal = signal;
    this.#hooks = hooks;
    this.#bodiless = method === 'HEAD';
    if (signal.aborted) {
      this.#fail(signal.reason);
      return;
    }
    // A stop fires once, and the exchange removes its listener when it settles (`#release`): `on`,
    // without the wrapper `once` makes for every request.
    if ('addEventListener' in signal) signal.addEventListener('abort', this.#onAbort, { once: true });
    else signal.on('abort', this.#onAbort);
  }

  onRequestStart(controller: Controller): void {
    this.#controller = controller;
    // Stopped while it waited for a connection: it never goes out.
    if (this.#settled && !this.#head) controller.abort(this.#signal.reason ?? errors.clientGone());
    else this.#hooks.written?.();
  }

  onResponseStart(controller: Controller, status: number, headers: IncomingHttpHeaders): void {
    if (this.#settled) return;
    // An informational answer (a 100, 102, 103): the real one follows.
    if (status < 200 && status !== 101) return;
    if (!relayableStatus(status)) {
      // A 502 at once; the connection is cut rather than read to the end of an answer we refuse.
      const err = errors.upstreamBadAnswer('status');
      this.#fail(err);
      controller.abort(err);
      return;
    }
    this.#head = true;
    this.#hooks.head();
    this.#status = status;
    this.#headers = headers;
    const declared = headers['content-length'];
    const size = typeof declared === 'string' ? Number(declared) : Number.NaN;
    if (this.#bodiless || status === 204 || status === 304 || size <= HELD) {
      this.#chunks = [];
      return;
    }
    const stream = new Readable({
      highWaterMark: HELD,
      read: () => controller.resume(),
      destroy: (err, done) => {
        // The reader gave up (the client went away): the upstream request goes too.
        if (!stream.readableEnded) controller.abort(err ?? errors.clientGone());
        done(err);
      },
    });
    this.#stream = stream;
    this.#settled = true;
    // The signal still stops a body that streams, until it is over.
    stream.once('close', () => this.#release());
    this.#hooks.resolve({ statusCode: status, headers: this.#headers, body: stream });
  }

  onResponseData(controller: Controller, chunk: Buffer): void {
    if (this.#chunks !== undefined) this.#chunks.push(chunk);
    else if (this.#stream !== undefined && !this.#stream.push(chunk)) controller.pause();
  }

  onResponseEnd(): void {
    const chunks = this.#chunks;
    if (chunks !== undefined && !this.#settled) {
      this.#settle();
      const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
      this.#hooks.resolve({ statusCode: this.#status, headers: this.#headers, body });
      return;
    }
    this.#stream?.push(null);
  }

  onResponseError(_controller: Controller, err: Error): void {
    if (this.#stream !== undefined) this.#stream.destroy(err);
    else this.#fail(err);
  }

  /** The signal fired: the request stops wherever it is. */
  #abort(reason: unknown): void {
    const controller = this.#controller;
    if (this.#stream !== undefined) {
      this.#stream.destroy(reason as Error);
      return;
    }
    this.#fail(reason);
    controller?.abort(reason as Error);
  }

  #fail(err: unknown): void {
    if (this.#settled) return;
    this.#settle();
    this.#hooks.reject(err, !this.#head);
  }

  #settle(): void {
    this.#settled = true;
    this.#release();
  }

  #release(): void {
    const signal = this.#signal;
    if ('removeEventListener' in signal) signal.removeEventListener('abort', this.#onAbort);
    else signal.removeListener('abort', this.#onAbort);
  }
}
