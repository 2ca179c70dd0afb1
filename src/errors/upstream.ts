/**
 * The codes of an upstream service's faults (contract §5): one per `kind` of
 * `gateway_upstream_errors_total`, which is each code's `label` and the log line's `reason`. An
 * answer the upstream did send, whatever its status, is relayed and carries no code.
 */
import type { CodeFamily } from './entry.js';

/** The upstream could not be reached, or dropped the exchange: 502. */
export const UPSTREAM_UNAVAILABLE = {
  GW_UPSTREAM_UNREACHABLE: {
    status: 502,
    message: 'upstream service unavailable',
    label: 'connect',
    reason: 'The connection to the upstream was refused, or its host or network is unreachable.',
    action: "Operator: check that the service runs at the backend's `url` (`/readyz` names it).",
  },
  GW_UPSTREAM_DNS_FAILED: {
    status: 502,
    message: 'upstream service unavailable',
    label: 'dns',
    reason: "The upstream's host name did not resolve.",
    action: "Operator: check the backend's `url` and DNS.",
  },
  GW_UPSTREAM_CONNECT_TIMEOUT: {
    status: 502,
    message: 'upstream service unavailable',
    label: 'connect_timeout',
    reason: 'The connection to the upstream was not made within its `connect_timeout`.',
    action: 'Operator: check the network path to the service (firewalls drop rather than refuse).',
  },
  GW_UPSTREAM_RESET: {
    status: 502,
    message: 'upstream service unavailable',
    label: 'reset',
    reason: 'The upstream closed or reset the connection before its answer was complete.',
    action: "Operator: look at the service's own logs (its `X-Upstream-RequestID` where it sent one).",
  },
  GW_UPSTREAM_ALL_TARGETS_OUT: {
    status: 502,
    message: 'upstream unreachable',
    label: 'all_out',
    reason:
      'Every target of the backend is out (ejected, failing its health check, or failing every request): answered at once, without trying one.',
    action: "Operator: `/readyz` names the backend; look at its targets' health and the ejections metric.",
  },
  GW_UPSTREAM_FAILED: {
    status: 502,
    message: 'upstream service unavailable',
    label: 'other',
    reason: 'The exchange with the upstream failed in another way; the log line has the details.',
    action: 'Operator: look up the request id in the log.',
  },
} as const satisfies CodeFamily;

/** The upstream was reached but too slow: 504. */
export const UPSTREAM_TIMEOUT = {
  GW_UPSTREAM_HEADERS_TIMEOUT: {
    status: 504,
    message: 'upstream service timed out',
    label: 'headers_timeout',
    reason: "The upstream's answer did not start within its `headers_timeout`.",
    action: "Operator: look at the service's latency; the outcome of a write is unknown.",
  },
  GW_UPSTREAM_BODY_TIMEOUT: {
    status: 504,
    message: 'upstream service timed out',
    label: 'body_timeout',
    reason: "The upstream's answer body stalled for longer than its `body_timeout`.",
    action: "Operator: look at the service's latency and the network.",
  },
} as const satisfies CodeFamily;

/** The upstream answered with something that is not a usable answer: 502. */
export const UPSTREAM_BAD_ANSWER = {
  GW_UPSTREAM_PROTOCOL_ERROR: {
    status: 502,
    message: 'upstream service sent an invalid answer',
    label: 'protocol',
    reason: "The upstream's answer is not valid HTTP (or its length does not match `Content-Length`).",
    action: 'Operator: check that `url` points at the service and not at another protocol or proxy.',
  },
  GW_UPSTREAM_BAD_STATUS: {
    status: 502,
    message: 'upstream service sent an invalid answer',
    label: 'status',
    reason: 'The upstream answered a status outside 100–599, or a `101` nobody asked for.',
    action: "Operator: look at the service's own logs.",
  },
  GW_UPSTREAM_ANSWER_TOO_LARGE: {
    status: 502,
    message: 'upstream service sent an invalid answer',
    label: 'too_large',
    reason: "The upstream's answer is larger than the backend's `max_response_size`.",
    action: 'Operator: check what the service answers, or raise `max_response_size`.',
  },
  GW_UPSTREAM_ANSWER_TRUNCATED: {
    status: 502,
    message: 'upstream service sent an invalid answer',
    label: 'truncated',
    reason:
      "The upstream's answer body ended early; when its head was already relayed, the connection is cut instead.",
    action: "Operator: look at the service's own logs; the client may try again.",
  },
  GW_UPSTREAM_VERSION_MISSING: {
    status: 502,
    message: 'upstream service sent an invalid answer',
    label: 'no_version',
    reason: "The upstream's answer for the `latest` checksum does not say which version it is.",
    action: 'Operator: check that the collectors backend points at the service.',
  },
} as const satisfies CodeFamily;
