/**
 * The asset group tags backend on an upstream service speaking this API: the request goes out as it
 * came (method, raw target) and the upstream's answer, whatever its status, is relayed unchanged.
 */
import type { UpstreamConfig } from '../../config/schema.js';
import { passedHeaders } from '../../upstream/answer.js';
import { createUpstreamClient, type UpstreamDeps } from '../../upstream/client.js';
import { RelayedResponse } from '../relayed.js';
import type { AssetGroupTagsBackend } from './backend.js';

export async function createUpstreamAssetGroupTags(
  config: UpstreamConfig,
  name: string,
  deps: UpstreamDeps,
): Promise<AssetGroupTagsBackend> {
  const client = createUpstreamClient(config, name, deps);
  return {
    async getMember(tagId, memberId, signal, request) {
      const answer = await client.send({
        method: request?.req.method === 'HEAD' ? 'HEAD' : 'GET',
        target: request?.rawTarget ?? `/api/v2/asset-group-tags/${tagId}/members/${memberId}`,
        headers: { accept: 'application/json' },
        ...(request ? { client: request } : {}),
        signal,
      });
      return new RelayedResponse(answer.statusCode, passedHeaders(answer.headers), answer.body);
    },
    ready: () => client.ready(),
    close: () => client.close(),
  };
}
