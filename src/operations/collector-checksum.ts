/**
 * GetCollectorChecksum: `GET`/`HEAD /api/v2/collectors/{collector_type}/{release_tag}/checksum`.
 * Answers a release's checksum file with a strong ETag, so clients can revalidate `latest` cheaply
 * and keep a version's file for good.
 */
import { createHash } from 'node:crypto';
import {
  COLLECTOR_TYPES,
  type CollectorsBackend,
  type CollectorType,
} from '../backends/collectors/backend.js';
import { errors } from '../errors.js';
import type { RequestContext } from '../http/context.js';
import { deadlineOf } from '../http/deadline.js';
import { sendBytes, sendEmpty } from '../http/respond.js';
import type { Operation } from './operation.js';

const IMMUTABLE = 'private, max-age=31536000, immutable';
const REVALIDATE = 'private, no-cache';
/** One entity-tag of an `If-None-Match` list, with its optional weak prefix. */
const ENTITY_TAG = /(?:W\/)?("[^"]*")/g;

/** The operation, answering from `backend` (the checksum cache in front of the configured store). */
export function createCollectorChecksum(deps: { backend: CollectorsBackend }): Operation {
  return {
    id: 'GetCollectorChecksum',
    permission: 'collectors:read',
    async handle(ctx: RequestContext): Promise<void> {
      const params = ctx.route?.params ?? {};
      const type = collectorType(params.collector_type ?? '');
      const release = releaseTag(params.release_tag ?? '');
      const file = await deps.backend.getChecksum(type, release, deadlineOf(ctx), ctx);
      if (file === undefined) throw errors.notFound('path:release_tag');

      const tag = etag(file.bytes);
      const headers: Record<string, string> = {
        ETag: tag,
        'Cache-Control': release === 'latest' ? REVALIDATE : IMMUTABLE,
      };
      if (file.cache !== undefined) headers['X-Cache'] = file.cache;
      if (matches(ctx.req.headers['if-none-match'], tag)) {
        sendEmpty(ctx, 304, headers);
        return;
      }
      sendBytes(ctx, 200, file.bytes, {
        ...headers,
        'Content-Type': 'application/octet-stream',
        'Content-Disposition': `attachment; filename="${type}-v${file.version}.zip.sha256"`,
      });
    },
  };
}

function collectorType(value: string): CollectorType {
  if ((COLLECTOR_TYPES as readonly string[]).includes(value)) return value as CollectorType;
  throw errors.invalidCollectorType(value);
}

/**
 * A semantic version as semver 2.0 writes one (its own regular expression), without the build part:
 * numbers of any size and no leading zeros, an optional pre-release.
 */
const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?$/;

/** `latest`, or the version without its `v`; a version too large for any release is simply unknown (404). */
function releaseTag(value: string): string {
  if (value === 'latest') return value;
  const version = value.startsWith('v') ? value.slice(1) : value;
  if (!SEMVER.test(version)) throw errors.invalidReleaseTag();
  return version;
}

const etags = new WeakMap<Buffer, string>();

/** A strong ETag of the bytes, computed once per file (the cache hands out the same Buffer). */
function etag(bytes: Buffer): string {
  let tag = etags.get(bytes);
  if (tag === undefined) {
    tag = `"sha256-${createHash('sha256').update(bytes).digest('base64url')}"`;
    etags.set(bytes, tag);
  }
  return tag;
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
