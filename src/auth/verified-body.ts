/**
 * The body of a request being authenticated: read under the limit only once the headers are
 * verified (then the client is told `100 Continue`), hashed as it arrives when a scheme verifies it,
 * and handed to later stages only once verified.
 */
import type { Config } from '../config/schema.js';
import { errors } from '../errors.js';
import { type BodyOptions, emptyBody, type HeldBody, readBody } from '../http/body.js';
import type { RequestContext } from '../http/context.js';
import { deadlineOf } from '../http/deadline.js';

/** Reads request bodies under one configuration's limits. */
export class BodyReader {
  readonly #server: Config['server'];
  readonly #tmpDir: string;

  constructor(server: Config['server'], tmpDir: string) {
    this.#server = server;
    this.#tmpDir = tmpDir;
  }

  /** The body: at once when it has none (the common GET), else read under the limit. */
  read(ctx: RequestContext, onChunk?: (chunk: Buffer) => void): HeldBody | Promise<HeldBody> {
    return emptyBody(ctx.req) ?? readBody(ctx.req, this.#options(ctx, onChunk));
  }

  /** The body of a request that frames one, read under the limit; `onChunk` sees each chunk. */
  readAll(ctx: RequestContext, onChunk?: (chunk: Buffer) => void): Promise<HeldBody> {
    return readBody(ctx.req, this.#options(ctx, onChunk));
  }

  #options(ctx: RequestContext, onChunk: ((chunk: Buffer) => void) | undefined): BodyOptions {
    // The headers are verified: now the client may send the body it held back for `100 Continue`.
    if (ctx.req.headers.expect?.toLowerCase() === '100-continue') ctx.res.writeContinue();
    const server = this.#server;
    return {
      limit: bodyLimit(ctx, server),
      memoryThreshold: server.body_memory_threshold,
      tmpDir: this.#tmpDir,
      idleTimeout: server.body_idle_timeout,
      signal: deadlineOf(ctx),
      ...(onChunk ? { onChunk } : {}),
    };
  }
}

/**
 * Hands the verified body to later stages. A client that went away while the last bytes were being
 * settled may have closed the response already (whose cleanup then found no body): remove it here.
 */
export function hold(ctx: RequestContext, body: HeldBody): void | Promise<void> {
  ctx.body = body;
  if (!ctx.res.closed) return undefined;
  const disposed = body.dispose();
  if (disposed === undefined) throw errors.bodyAborted();
  return disposed.then(() => {
    throw errors.bodyAborted();
  });
}

/** The body limit of `ctx`'s request: its front-door route's (`max_body`), else `server.max_body_size`. */
export function bodyLimit(ctx: RequestContext, server: Config['server']): number {
  return ctx.route?.rule?.maxBody ?? server.max_body_size;
}
