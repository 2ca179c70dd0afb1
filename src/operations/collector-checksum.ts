/**
 * GetCollectorChecksum: `GET`/`HEAD /api/v2/collectors/{collector_type}/{release_tag}/checksum`.
 * Answers a release's checksum file with a strong ETag, so clients can revalidate `latest` cheaply
 * and keep a version's file for good.
 */
import { createHash } from 'node:crypto';
import {
  COLLECTOR_TYPES,
  type ChecksumFile,
  type CollectorsBackend,
  type CollectorType,
} from '../backends/collectors/backend.js';
import { checksumFileName, parseReleaseTag } from '../backends/collectors/release.js';
import { errors } from '../errors.js';
import type { RequestContext } from '../http/context.js';
import { backendCall } from '../http/forwarded.js';
import { type HeaderList, relay, sendBytes, sendEmpty } from '../http/respond.js';
import { UpstreamAnswer } from '../upstream/answer.js';
import type { Operation } from './operation.js';

const IMMUTABLE = 'private, max-age=31536000, immutable';
const REVALIDATE = 'private, no-cache';
/** One entity-tag of an `If-None-Match` list, with its optional weak prefix. */
const ENTITY_TAG = /(?:W\/)?("[^"]*")/g;

/** The operation, answering from `backend` (the checksum cache in front of the configured store). */
export function createCollectorChecksum(deps: { backend: CollectorsBackend }): Operation {
  /** A strong ETag per file, computed once (the cache hands out the same Buffer). */
  const etags = new WeakMap<Buffer, string>();
  const etag = (bytes: Buffer): string => {
    let tag = etags.get(bytes);
    if (tag === undefined) {
      tag = `"sha256-${createHash('sha256').update(bytes).digest('base64url')}"`;
      etags.set(bytes, tag);
    }
    return tag;
  };
  /**
   * The answer's headers per file served, for a version and for `latest`, made once: the cache hands
   * out the same object for a file and where it came from (`X-Cache`).
   */
  const heads = { version: new WeakMap<ChecksumFile, Heads>(), latest: new WeakMap<ChecksumFile, Heads>() };
  const headsOf = (file: ChecksumFile, type: CollectorType, release: string): Heads => {
    const kept = release === 'latest' ? heads.latest : heads.version;
    let found = kept.get(file);
    if (found === undefined || found.type !== type) {
      const tag = etag(file.bytes);
      const validators = ['ETag', tag, 'Cache-Control', release === 'latest' ? REVALIDATE : IMMUTABLE];
      if (file.cache !== undefined) validators.push('X-Cache', file.cache);
      const full = validators.concat(
        'Content-Type',
        'application/octet-stream',
        'Content-Disposition',
        `attachment; filename="${checksumFileName(type, file.version)}"`,
      );
      found = { type, tag, validators: Object.freeze(validators), full: Object.freeze(full) };
      kept.set(file, found);
    }
    return found;
  };
  return {
    id: 'GetCollectorChecksum',
    permission: 'collectors:read',
    handle(ctx: RequestContext) {
      const params = ctx.route?.params ?? {};
      const type = collectorType(params.collector_type ?? '');
      const release = parseReleaseTag(params.release_tag ?? '');
      if (release === undefined) throw errors.invalidReleaseTag();
      const found = deps.backend.getChecksum(type, release, backendCall(ctx));
      // A cache hit answers at once: no promise, no turn of the event loop.
      if (found instanceof Promise) return found.then((file) => answer(ctx, type, release, file));
      return answer(ctx, type, release, found);
    },
  };

  /** Writes the file (or 304), or relays an upstream's own answer. */
  function answer(
    ctx: RequestContext,
    type: CollectorType,
    release: string,
    file: ChecksumFile | UpstreamAnswer | undefined,
  ): void | Promise<void> {
    if (file instanceof UpstreamAnswer) return relay(ctx, file);
    if (file === undefined) throw errors.notFound('path:release_tag');
    const head = headsOf(file, type, release);
    if (matches(ctx.req.headers['if-none-match'], head.tag)) return sendEmpty(ctx, 304, head.validators);
    sendBytes(ctx, 200, file.bytes, head.full);
  }
}

/** The headers of a file's answer: its validators (a 304's) and all of them (a 200's). */
interface Heads {
  readonly type: CollectorType;
  readonly tag: string;
  readonly validators: HeaderList;
  readonly full: HeaderList;
}

function collectorType(value: string): CollectorType {
  if ((COLLECTOR_TYPES as readonly string[]).includes(value)) return value as CollectorType;
  throw errors.invalidCollectorType(value);
}

/** RFC 9110 §13.1.2: `*` matches any current representation; otherwise weak comparison against each tag. */
function matches(header: string | undefined, tag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === '*') return true;
  for (const m of header.matchAll(ENTITY_TAG)) {
    if (m[1] === tag) return true;
  }
  return false;
}
