/**
 * The asset group tags backend on an upstream service speaking this API: the request goes out as it
 * came (method, raw target) and the upstream's answer, whatever its status, is relayed unchanged.
 */
import { createUpstreamClient } from '../../upstream/client.js';
import { upstreamBackendShape, type UpstreamConfig } from '../../config/upstream.js';
import type { BackendType } from '../backend-type.js';
import type { AssetGroupTagsBackend } from './backend.js';

/** What the member lookup asks the upstream for. */
const ACCEPT_JSON = Object.freeze({ accept: 'application/json' });

/** `{type: upstream, url, auth, …}` for the asset group tags. */
export const upstreamAssetGroupTags: BackendType<
  UpstreamConfig & { type: 'upstream' },
  AssetGroupTagsBackend
> = {
  config: upstreamBackendShape,
  async open(config, deps) {
    const client = createUpstreamClient(config, deps.name, deps);
    return {
      getMember(_tagId, _memberId, call) {
        const { request, stop } = call;
        return client.relay({ request, headers: ACCEPT_JSON, signal: stop, meter: call, parent: call.span });
      },
      ready: () => client.ready(),
      close: () => client.close(),
    };
  },
};
