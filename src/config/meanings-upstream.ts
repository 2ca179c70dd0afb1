/**
 * The meaning of each key of an upstream (`<upstream>.…`: every upstream backend and pass-through),
 * read by `meanings.ts` with the rest: the generated reference and the JSON Schema's descriptions.
 */
export const UPSTREAM_MEANINGS: Readonly<Record<string, string>> = {
  '<upstream>.url': '`http://` or `https://` base URL of the service; a path is a prefix of every target',
  '<upstream>.auth': 'how the gateway authenticates to the service',
  '<upstream>.targets':
    'several base URLs of one service (its replicas), instead of `url`: one scheme, no duplicates, no user name or password',
  '<upstream>.balance': '`least_request` (fewest requests in flight, ties at random) or `round_robin`',
  '<upstream>.health_check': 'optional active health check of each target (targets start healthy)',
  '<upstream>.health_check.path': 'a path the service answers 2xx without credentials (starts with `/`)',
  '<upstream>.health_check.interval': 'time between two checks of one target',
  '<upstream>.health_check.timeout': 'a check not answered within this fails',
  '<upstream>.health_check.healthy': 'consecutive passes that bring a target back',
  '<upstream>.health_check.unhealthy': 'consecutive fails that take a target out',
  '<upstream>.outlier':
    'passive ejection of a target that fails requests (connect failures, resets, timeouts, 502/503/504)',
  '<upstream>.outlier.consecutive_failures': 'failures in a row that eject a target',
  '<upstream>.outlier.base_ejection':
    'ejection time, multiplied by the target’s ejection count (at most 10×)',
  '<upstream>.outlier.max_ejected': 'at most this share of the targets ejected at once (never all)',
  '<upstream>.retries': 'sending a failed request to another target (never a PATCH whose bytes reached one)',
  '<upstream>.retries.attempts': 'retries per request (0: none; at most 5)',
  '<upstream>.retries.budget': 'retries in flight at most this share of the requests in flight (at least 3)',
  '<upstream>.auth.type':
    '`signature` (re-signs every request with its own token), `bearer` (a static token) or `client` (forwards the client’s credentials)',
  '<upstream>.auth.token_id': 'signature: the gateway’s token id at the service',
  '<upstream>.auth.token_key': 'signature: that token’s key; give it with `${file:}`',
  '<upstream>.auth.scheme': 'signature: the `Authorization` scheme word',
  '<upstream>.auth.token': 'bearer: the token sent; give it with `${file:}`',
  '<upstream>.connect_timeout': 'TCP and TLS connect; past it: 502',
  '<upstream>.headers_timeout': 'wait for the answer’s headers; past it: 504 `upstream service timed out`',
  '<upstream>.body_timeout': 'longest pause inside the answer’s body',
  '<upstream>.max_body':
    'pass-through only: the body limit of the front door’s `upload` route (`POST /api/v2/file-upload/<id>`, collector uploads)',
  '<upstream>.connections': 'keep-alive connections per upstream, per process',
  '<upstream>.max_response_size': 'largest checksum answer read (502 past it)',
  '<upstream>.tls': 'for an `https://` service (`check-config` warns on an `http://` one)',
  '<upstream>.tls.ca':
    'PEM CA certificate(s) the service’s certificate is verified against (default: Node’s CAs)',
  '<upstream>.tls.cert': 'a client certificate (chain) the gateway presents (mTLS); with `key`',
  '<upstream>.tls.key': 'its private key; with `cert`',
  '<upstream>.tls.servername':
    'the name sent in SNI and checked in the service’s certificate (default: the URL’s host)',
};
