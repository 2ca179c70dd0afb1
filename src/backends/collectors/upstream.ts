/**
 * The collectors backend on an upstream service speaking this API. The checksum cache sits in front
 * of it, so an answer is read whole (bounded): a 200 becomes the file (its version from the
 * upstream's `Content-Disposition`, authoritative for `latest`), and any other status (a 404
 * included) the upstream's own answer, passed to the client unchanged.
 */
import type { UpstreamConfig } from '../../config/schema.js';
import { errors, UpstreamStatusError } from '../../errors.js';
import { passedHeaders } from '../../upstream/answer.js';
import { createUpstreamClient, type UpstreamDeps } from '../../upstream/client.js';
import type { CollectorsBackend } from './backend.js';

/** The most of an upstream's error answer that is read and passed on. */
const ERROR_BODY_LIMIT = 64 * 1024;

export async function createUpstreamCollectors(
  config: UpstreamConfig,
  name: string,
  deps: UpstreamDeps,
): Promise<CollectorsBackend> {
  const client = createUpstreamClient(config, name, deps);
  return {
    async getChecksum(type, release, signal, request) {
      const answer = await client.send({
        method: 'GET',
        // The client's raw target when there is one (its signature covers it under `client` auth).
        target:
          request?.rawTarget ??
          `/api/v2/collectors/${type}/${release === 'latest' ? 'latest' : `v${release}`}/checksum`,
        headers: { accept: 'application/octet-stream' },
        // One fetch serves every request waiting on it: none of their deadlines is the fetch's.
        prefer: false,
        ...(request ? { client: request } : {}),
        signal,
      });
      const status = answer.statusCode;
      // The service decides what an unknown version gets: its 404 (or anything but a 200) passes
      // through as it is, and is not cached.
      if (status !== 200) {
        const body = await client.read(answer, ERROR_BODY_LIMIT, signal);
        throw new UpstreamStatusError(status, body, passedHeaders(answer.headers));
      }
      const bytes = await client.read(answer, config.max_response_size, signal);
      const version = versionOf(answer.headers['content-disposition'], type) ?? release;
      if (version === 'latest') throw errors.upstreamBadAnswer('no_version');
      return { version, bytes };
    },
    ready: () => client.ready(),
    close: () => client.close(),
  };
}

/** The version named by `attachment; filename="<type>-v<version>.zip.sha256"`, without its `v`. */
function versionOf(disposition: string | string[] | undefined, type: string): string | undefined {
  if (typeof disposition !== 'string') return undefined;
  const m = /filename="?([^";]+)"?/.exec(disposition);
  const file = m?.[1];
  const prefix = `${type}-`;
  if (file === undefined || !file.startsWith(prefix) || !file.endsWith('.zip.sha256')) return undefined;
  const version = file.slice(prefix.length, -'.zip.sha256'.length).replace(/^v/, '');
  return /^[0-9A-Za-z.+-]{1,128}$/.test(version) ? version : undefined;
}
