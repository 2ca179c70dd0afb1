/**
 * The meaning of each configuration key, by key path: what the generated configuration reference
 * (docs/configuration.md) and the JSON Schema's descriptions say. Types, ranges and defaults come from
 * the schema itself; `npm run docs:check` fails on a key without a meaning and on a meaning without a
 * key. Paths: `server.port`, `auth.jwt.issuers[].issuer` (a list's entries), `auth.jwt.permission_map.*`
 * (a map's values), `<upstream>.url` (a shape named once in the JSON Schema's `$defs`).
 */
import { UPSTREAM_MEANINGS } from './meanings-upstream.js';

const MEANINGS: Readonly<Record<string, string>> = {
  server: 'the API listener',
  'server.host': 'API listen address (`0.0.0.0` in a container)',
  'server.port': 'API port; `0` picks a free port',
  'server.shutdown_grace':
    'how long in-flight requests may finish after SIGTERM/SIGINT; connections still open then are cut',
  'server.workers':
    'API processes (node:cluster), or `auto` = the cores this process may use; above 1 a primary forks them and serves the admin listener; must be 1 while `sso_providers` is `local`; changes only on restart',
  'server.trust_proxy':
    'deprecated: `true` trusts every `X-Forwarded-For` hop (the leftmost entry is the client, forgeable); warns at start; not with `trusted_proxies`',
  'server.trusted_proxies':
    'addresses or CIDRs (or `loopback`, `linklocal`, `uniquelocal`) of the proxies in front of the gateway: the client address is the rightmost `X-Forwarded-For` hop that is not one of them; their `X-Forwarded-Proto`/`-Host` are passed on',
  'server.max_header_size': 'request line and headers; beyond: 431 (restart to change)',
  'server.max_body_size':
    'request body; beyond: 413 (from `Content-Length` before reading, else while reading)',
  'server.body_memory_threshold':
    'bodies larger than this are held in a private temporary file until verified (memory stays flat under concurrent uploads)',
  'server.headers_timeout': 'time to receive the request headers; beyond: 408',
  'server.body_idle_timeout': 'longest pause while a body is arriving; beyond: 408 (a stalled upload)',
  'server.keep_alive_timeout': 'idle keep-alive connections are closed after this',
  'server.tmp_dir': 'where large bodies are spooled (default: the OS temporary folder)',
  'server.tls':
    'HTTPS on the API listener (plain HTTP on its port gets no answer); adding or removing it takes a restart',
  'server.tls.cert': 'the certificate (PEM, the chain after the leaf)',
  'server.tls.key': 'its private key (PEM, not encrypted)',
  'server.tls.min_version': 'the lowest TLS version accepted; ciphers are Node’s defaults',
  'server.tls.client_auth':
    '`optional`: clients may present a certificate (an authentication scheme); `require`: the handshake fails without one verified against `client_ca`',
  'server.tls.client_ca':
    'CA certificate(s), PEM, that client certificates are verified against; required with `optional` or `require`',
  'server.tls.client_crl': 'a PEM certificate revocation list: a revoked client certificate is not verified',
  'server.tls.session_timeout':
    'how long a TLS session ticket is accepted after the full handshake that made it (see docs/tls-resumption.md)',
  admin: 'the admin listener (`/metrics`, `/livez`, `/readyz`); changes only on restart',
  'admin.host': 'admin listen address',
  'admin.port': 'admin port; must differ from `server.port`',
  'admin.tls': 'HTTPS on the admin listener (never asks for client certificates, so probes still reach it)',
  'admin.tls.cert': 'the certificate (PEM)',
  'admin.tls.key': 'its private key (PEM, not encrypted)',
  'admin.tls.min_version': 'the lowest TLS version accepted',
  logging: 'the log lines (JSON, on standard output)',
  'logging.level': 'the least severe level written',
  auth: 'the authentication schemes',
  'auth.signature': 'signed requests (the `Authorization`, `RequestDate` and `Signature` headers)',
  'auth.signature.scheme':
    'the `Authorization` scheme word of signed requests (matched case-insensitively); never `bearer`',
  'auth.signature.max_clock_skew': 'how far `RequestDate` may be from the gateway’s clock, either way',
  'auth.signature.max_utc_offset':
    'the largest zone offset `RequestDate` may carry (`0s`: UTC only); bounds how long a captured request can be replayed',
  'auth.signature.explain_mismatch':
    'a digest mismatch’s 401 carries a second envelope error saying what the gateway signed; `false` leaves it out',
  'auth.signature.tokens':
    'signed-request tokens written in the configuration; an id the token store also holds is ignored (with a warning)',
  'auth.signature.tokens[].id': 'the token id clients send (a UUID, compared case-insensitively; unique)',
  'auth.signature.tokens[].key':
    'the shared secret (its UTF-8 bytes are the HMAC key); give it with `${file:}` or `${env:}`',
  'auth.signature.tokens[].subject': 'who the token is, as logged',
  'auth.signature.tokens[].permissions': 'what it may do; none listed: nothing',
  'auth.signature.token_store':
    'tokens kept in PostgreSQL beside the list above, managed with `gateway tokens` (docs/api-tokens.md)',
  'auth.signature.token_store.type': '`postgres`',
  'auth.signature.token_store.url':
    '`postgres://` URL of the database (may be the backends’ own; `options=-c search_path=…` picks the schema); never logged',
  'auth.signature.token_store.encryption_key':
    '32 random bytes in standard base64 (`openssl rand -base64 32`): seals every token key (AES-256-GCM); keep it apart from the database',
  'auth.signature.token_store.previous_encryption_keys':
    'earlier encryption keys: rows sealed under them still open until `gateway tokens reencrypt` has moved them',
  'auth.signature.token_store.poll': 'full re-read of the store, the safety net behind the notifications',
  'auth.signature.token_store.last_used_interval':
    '`last_used_at` is written at most once per this interval per token, across all replicas',
  'auth.signature.token_store.connect_timeout': 'opening a connection to the store',
  'auth.signature.token_store.migrate':
    'apply the schema migrations at start and in `gateway tokens`; `false`: check the version only',
  'auth.jwt': 'bearer JWTs (`Authorization: Bearer …`)',
  'auth.jwt.hs256_secret': 'standard base64 secret of HS256 tokens; without it every HS256 token is refused',
  'auth.jwt.jwks_url':
    '`http(s)://` URL of one identity provider’s JSON Web Key Set, whose keys verify asymmetric tokens; a query is allowed, credentials and fragments are not',
  'auth.jwt.issuer': 'required `iss` of HS256 tokens and of `jwks_url`’s tokens',
  'auth.jwt.audience':
    'required `aud` of HS256 tokens and of `jwks_url`’s tokens: one value or a list (any match); `check-config` warns when `jwks_url` is set without it',
  'auth.jwt.algorithms':
    'asymmetric algorithms `jwks_url`’s tokens may use; absent: any a key of the set can verify (`none` and HMAC are never listed)',
  'auth.jwt.clock_tolerance': 'leeway for `exp`, `nbf`, `iat` and `max_token_age`',
  'auth.jwt.max_token_age': 'the oldest `iat` accepted; when set, `iat` is required',
  'auth.jwt.permissions_claim':
    'where the permissions are: a dotted path (`realm_access.roles`, `scope`, `scp`) or a list of keys for claim names holding dots; an array of strings or a space-separated string',
  'auth.jwt.permission_map':
    'translates the claim’s names (roles, scopes) into the gateway’s permissions; with a map, a name it does not list grants nothing',
  'auth.jwt.default_permissions': 'permissions of a token without the claim (never translated by the map)',
  'auth.jwt.jwks_refresh_interval': 'longest time between background refreshes of the key set',
  'auth.jwt.jwks_cooldown':
    'shortest time between two fetches caused by unknown `kid`s; also the retry delay after a failed fetch',
  'auth.jwt.jwks_timeout': 'bound of one key set (or discovery document) fetch, body included',
  'auth.jwt.token_cache_size':
    'verified tokens remembered (least recently used go first); `0` turns the cache off',
  'auth.jwt.issuers':
    'several identity providers at once (at most 32): an asymmetric token’s `iss` picks the entry (docs/identity-providers.md)',
  'auth.jwt.issuers[].name':
    'the `provider` label of the JWKS metrics and the `/readyz` check `keys:<name>`; default: the issuer’s host; unique',
  'auth.jwt.issuers[].issuer':
    'the `iss` of its tokens, compared exactly; with discovery an `http(s)://` URL',
  'auth.jwt.issuers[].jwks_url': 'the provider’s key set, instead of discovery',
  'auth.jwt.issuers[].discovery':
    'read `<issuer>/.well-known/openid-configuration` for `jwks_uri` (default `true` without `jwks_url`)',
  'auth.jwt.issuers[].audience':
    'required `aud` of its tokens (one value or a list); not inherited; `check-config` warns without it',
  'auth.jwt.issuers[].required':
    '`/readyz` waits until its keys have loaded once, and a reload that adds it fails if they do not load within 5 s',
  'auth.jwt.issuers[].algorithms': 'as `auth.jwt.algorithms`, for this provider (default: that value)',
  'auth.jwt.issuers[].clock_tolerance':
    'as `auth.jwt.clock_tolerance`, for this provider (default: that value)',
  'auth.jwt.issuers[].max_token_age': 'as `auth.jwt.max_token_age`, for this provider (default: that value)',
  'auth.jwt.issuers[].permissions_claim':
    'as `auth.jwt.permissions_claim`, for this provider (default: that value)',
  'auth.jwt.issuers[].permission_map':
    'as `auth.jwt.permission_map`, for this provider (default: that value)',
  'auth.jwt.issuers[].default_permissions':
    'as `auth.jwt.default_permissions`, for this provider (default: that value)',
  'auth.jwt.issuers[].jwks_refresh_interval':
    'as `auth.jwt.jwks_refresh_interval`, for this provider (default: that value)',
  'auth.jwt.issuers[].jwks_cooldown': 'as `auth.jwt.jwks_cooldown`, for this provider (default: that value)',
  'auth.jwt.issuers[].jwks_timeout': 'as `auth.jwt.jwks_timeout`, for this provider (default: that value)',
  'auth.client_certificates':
    'who a verified TLS client certificate is (the first entry it matches); `check-config` warns when no listener asks for certificates',
  'auth.client_certificates[].match': 'exactly one of `uri`, `dns`, `email`, `cn`',
  'auth.client_certificates[].match.uri': 'a URI SAN (a SPIFFE id), compared exactly',
  'auth.client_certificates[].match.dns': 'a DNS SAN, compared case-insensitively (no wildcards)',
  'auth.client_certificates[].match.email': 'an e-mail SAN, compared case-insensitively',
  'auth.client_certificates[].match.cn': 'the subject’s common name, compared exactly',
  'auth.client_certificates[].subject': 'who the certificate is, as logged',
  'auth.client_certificates[].permissions': 'what it may do; none listed: nothing',
  prefer: 'the deadline a client asks for with `Prefer: wait=N`',
  'prefer.default_wait': 'seconds of the deadline without `Prefer` (or with `wait=0`)',
  'prefer.max_wait':
    'the most seconds a client may ask for (larger values are clamped); ends the latency histograms’ buckets',
  'prefer.allow_bypass': 'whether `Prefer: wait=-1` removes the deadline',
  checksum_cache: 'the collector checksums held in memory',
  'checksum_cache.max_bytes': 'bytes of checksum files held',
  'checksum_cache.max_entry_bytes': 'larger files are served but not cached',
  'checksum_cache.latest_ttl': 'how long a resolution of `latest` is reused',
  forms: 'the SSO provider form (multipart)',
  'forms.max_parts': 'parts of a form; beyond: 413',
  'forms.max_field_size': 'bytes of a text part; beyond: 413',
  'forms.max_file_size': 'bytes of the metadata file; beyond: 413',
  backends: 'where each operation’s data comes from (docs/backends.md)',
  'backends.collectors': 'the checksum files: `local` or `upstream`',
  'backends.sso_providers': 'the SSO providers: `local`, `upstream` or `postgres`',
  'backends.asset_group_tags': 'the asset group tags: `local`, `upstream` or `postgres`',
  audit:
    'the audit trail of SSO provider changes and 403 refusals (docs/audit.md); without it (or without `store`) the trail follows `backends.sso_providers`',
  'audit.store': 'where the trail is kept: `postgres` (several replicas may share it) or `file` (one writer)',
  'audit.store.type': '`postgres` or `file`',
  'audit.store.url': 'postgres: the database; the providers’ own pool is used when it is their database',
  'audit.store.pool_size':
    'postgres: connections of the trail’s own pool (a database other than the providers’)',
  'audit.store.connect_timeout': 'postgres: connecting to the trail’s database',
  'audit.store.statement_timeout': 'postgres: longest statement on the trail’s database',
  'audit.store.migrate': 'postgres: apply the gateway’s schema migrations at start',
  'audit.store.path': 'file: the JSON-lines trail, relative to the configuration file; locked by one process',
  'audit.refused': 'record each 403 for a missing permission (`UnauthorizedAccessAttempt`)',
  'audit.serve_api': 'answer `GET /api/v2/audit` from this trail (permission `audit:read`)',
  passthrough:
    'every other authenticated `/api/v2` request of an identity holding `passthrough` is forwarded to this service; with it the gateway is the service’s front door (docs/front-door.md)',
  routes:
    'the operator’s entries of the front door’s route table, checked in order before the service’s own routes; needs `passthrough` (docs/front-door.md)',
  'routes[].name':
    'the route’s name in the log line and metrics (`[a-z0-9_-]{1,64}`, unique); a built-in route’s name (`login`, `sso`, `spec`, `ui`, `version`, `upload`, `passthrough`) replaces it',
  'routes[].path':
    'exactly this path, decoded once as requests are; not with `prefix`; never one of the three operations',
  'routes[].prefix':
    'every path that starts with it; ends in `/` (`/ui/` covers `/ui/x`, not `/ui`); not with `path`',
  'routes[].methods': 'the methods it covers, in capitals; none listed: every method',
  'routes[].auth':
    '`required` (authenticated, then `permission`), `none` (public: no credentials, none of the gateway’s added) or `deny` (404, nothing forwarded)',
  'routes[].permission': 'with `auth: required`: the permission needed; none given: any verified identity',
  'routes[].rate_limit':
    'the route’s own limit, per client address (`auth: none`) or per verified identity (`auth: required`); past it: 429 with `Retry-After`',
  'routes[].rate_limit.limit': 'requests admitted …',
  'routes[].rate_limit.window': '… in any interval of this length (whole seconds)',
  'routes[].max_body': 'this route’s body limit instead of `server.max_body_size`',
  'routes[].max_wait': 'this route’s `Prefer` ceiling in seconds instead of `prefer.max_wait`',
  rate_limits:
    'requests per verified identity and failed authentications per address (docs/rate-limits.md); absent: off',
  'rate_limits.store': 'where the counts live: `memory` (this process) or `redis` (shared)',
  'rate_limits.store.type': '`memory` or `redis`; `memory` is refused with `server.workers` above 1',
  'rate_limits.store.max_keys':
    'memory: subjects kept; the least recently used is dropped, its counts with it',
  'rate_limits.store.url':
    'redis: `redis://[user:password@]host:port/db` or `rediss://`; one of `url`, `sentinels`, `cluster`',
  'rate_limits.store.sentinels': 'redis: Sentinels (`host:port`) to ask for the current primary of `name`',
  'rate_limits.store.name': 'redis: the name the Sentinels monitor the primary under (with `sentinels`)',
  'rate_limits.store.sentinel_username': 'redis: the user the Sentinels ask for',
  'rate_limits.store.sentinel_password': 'redis: the password the Sentinels ask for',
  'rate_limits.store.cluster':
    'redis: some nodes (`host:port`) of a Redis Cluster; the others are found from them',
  'rate_limits.store.username': 'redis: the ACL user (not with a `url` that carries credentials)',
  'rate_limits.store.password': 'redis: the password; give it with `${file:}` or `${env:}`',
  'rate_limits.store.db': 'redis: the database number (not with `cluster`)',
  'rate_limits.store.tls': 'redis: TLS to every node and Sentinel (needs `rediss://` with `url`)',
  'rate_limits.store.tls.ca': 'a PEM CA trusted besides the system’s',
  'rate_limits.store.timeout': 'redis: the most one decision may take; past it `on_error` decides',
  'rate_limits.store.on_error':
    'redis unreachable or slower than `timeout`: `allow` admits, `deny` answers 503',
  'rate_limits.store.key_prefix': 'redis: every key starts with it',
  'rate_limits.policies':
    'limits per verified identity; a request is admitted when every policy that applies has room',
  'rate_limits.policies[].name':
    'the policy’s name in headers and metrics (`[a-z0-9_-]{1,64}`, unique; not `unauthenticated`)',
  'rate_limits.policies[].limit': 'requests admitted …',
  'rate_limits.policies[].window': '… in any interval of this length (whole seconds)',
  'rate_limits.policies[].operations':
    'the operations it counts (`passthrough`: every other `/api/v2` request); none listed: all of them',
  'rate_limits.unauthenticated':
    'failed authentications per client address (an IPv6 address by its /64); past it: 429 before authentication',
  'rate_limits.unauthenticated.limit': 'failed authentications …',
  'rate_limits.unauthenticated.window': '… in any interval of this length (whole seconds)',
  tracing: 'OpenTelemetry tracing over OTLP/HTTP; absent: off and not loaded; changes only on restart',
  'tracing.otlp_endpoint': 'the collector’s OTLP/HTTP traces URL (`http://127.0.0.1:4318/v1/traces`)',
  'tracing.service_name': 'the spans’ `service.name`',
  'tracing.sample_ratio': 'share of new traces recorded; a client’s sampled flag is honoured (parent-based)',
  '<local_backend>.type': '`local`: files beside the configuration',
  '<local_backend>.path':
    'collectors: a folder of `<type>/<type>-v<version>.zip.sha256`; the others: a JSON file (relative to the configuration file)',
  '<local_backend_of_sso_providers>.seed':
    'a file copied to `path` when `path` does not exist yet (its folder made): the embedded default keeps the file it writes in `state/`, made from the committed sample',
  '<upstream_backend>.type': '`upstream`: a service that speaks this API; every other key as in `<upstream>`',
  '<postgres_backend>.type': '`postgres`: one PostgreSQL database for every replica and worker',
  '<postgres_backend>.url':
    '`postgres://` URL; its parameters are honoured (`sslmode`, `options=-c search_path=…`); give it with `${file:}`/`${env:}`; never logged',
  '<postgres_backend>.pool_size': 'connections per process; backends naming the same URL share one pool',
  '<postgres_backend>.statement_timeout':
    'the server-side limit of one statement, a wait for a row lock included; past it: 503',
  '<postgres_backend>.connect_timeout':
    'opening a connection, and waiting for a free one in a full pool; past it: 503',
  '<postgres_backend>.migrate':
    'apply the schema migrations at start; `false`: check the version and stay not ready until `gateway migrate` has run',
  '<postgres_backend>.health_check_interval':
    'how often the database is probed while no request has proved it reachable',
  ...UPSTREAM_MEANINGS,
};

/** A key of these shapes means what the same key of the other shape means. */
const SAME_AS: ReadonlyArray<readonly [string, string]> = [
  ['<upstream_backend>.', '<upstream>.'],
  ['<local_backend_of_sso_providers>.', '<local_backend>.'],
];

/** The meaning of the key at `path`; undefined when none is written. */
export function meaningOf(path: string): string | undefined {
  const own = MEANINGS[path];
  if (own !== undefined) return own;
  for (const [prefix, as] of SAME_AS) {
    if (path.startsWith(prefix)) return MEANINGS[as + path.slice(prefix.length)];
  }
  return undefined;
}

/** Every key path with a meaning: `docs:check` fails on one the schema no longer has. */
export const MEANING_PATHS: readonly string[] = Object.keys(MEANINGS);
