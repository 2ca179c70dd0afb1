/**
 * The collectors backend on an upstream service speaking this API. The checksum cache sits in front
 * of it, so an answer is read whole (bounded): a 200 becomes the file (its version from the
 * upstream's `Content-Disposition`, authoritative for `latest`), and any other status (a 404
 * included) is the upstream's own answer, relayed unchanged and never cached.
 */
import { errors } from '../../errors.js';
import { passedHeaders, UpstreamAnswer } from '../../upstream/answer.js';
import { createUpstreamClient } from '../../upstream/client.js';
import { upstreamBackendShape, type UpstreamConfig } from '../../config/upstream.js';
import type { BackendType } from '../backend-type.js';
import type { CollectorsBackend } from './backend.js';
import { versionOfFileName } from './release.js';

/** The most of an upstream's error answer that is read and passed on. */
const ERROR_BODY_LIMIT = 64 * 1024;

/** `{type: upstream, url, auth, …}` for the collectors. */
export const upstreamCollectors: BackendType<UpstreamConfig & { type: 'upstream' }, CollectorsBackend> = {
  config: upstreamBackendShape,
  async open(config, deps) {
    const client = createUpstreamClient(config, deps.name, deps);
    return {
      // The client's own credentials decide what it may read: nothing is shared across identities.
      perIdentity: config.auth.type === 'client',
      async getChecksum(type, release, call) {
        const { request, stop: signal } = call;
        const answer = await client.send({
          request,
          headers: { accept: 'application/octet-stream' },
          signal,
          meter: call,
          parent: call.span,
        });
        const status = answer.statusCode;
        if (status !== 200) {
          const body = await client.read(answer, ERROR_BODY_LIMIT, signal);
          return new UpstreamAnswer(status, passedHeaders(answer.headers), body);
        }
        const bytes = await client.read(answer, config.max_response_size, signal);
        const version = versionOf(answer.headers['content-disposition'], type) ?? release;
        if (version === 'latest') throw errors.upstreamBadAnswer('no_version');
        return { version, bytes };
      },
      ready: () => client.ready(),
      close: () => client.close(),
    };
  },
};

/** The version named by `attachment; filename="<type>-v<version>.zip.sha256"`, without its `v`. */
function versionOf(disposition: string | string[] | undefined, type: string): string | undefined {
  if (typeof disposition !== 'string') return undefined;
  const file = /filename="?([^";]+)"?/.exec(disposition)?.[1];
  return file === undefined ? undefined : versionOfFileName(type, file);
}
