/**
 * Tracing with the official OpenTelemetry SDK, loaded only when `tracing` is configured
 * (`tracing.ts`). Nothing here is registered globally: the provider and the W3C propagator belong to
 * this app instance (two apps in one process, or a reload, never share them), and no context manager
 * is used: each span's parent is handed to it (`SpanParent`), its OpenTelemetry context carried on
 * the parent's object. Spans go out in batches over OTLP/HTTP (JSON encoding); parent-based sampling
 * at `sample_ratio` honours a client's sampled flag.
 */
import type { IncomingMessage } from 'node:http';
import {
  type Context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-base';
import type { TracingConfig } from '../../config/tracing.js';
import type { Logger } from '../logger.js';
import { buildInfo } from '../build.js';
import type { RequestTrace, SpanAttributes, SpanHandle, SpanParent, Tracing } from './tracing.js';

/** Methods named as they are; any other is `_OTHER` (HTTP semantic conventions). */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'CONNECT', 'TRACE']);
/** The most of a `User-Agent` a span carries, as a log line. */
const USER_AGENT = 256;

/** The OpenTelemetry context a span parent made here carries: the span's own, to start children in. */
interface Placed {
  readonly context: Context;
}

/** The context to start a child of `parent` in: the parent's, or none (a root span). */
const contextOf = (parent: SpanParent | undefined): Context =>
  parent === undefined ? ROOT_CONTEXT : (parent as SpanParent & Placed).context;

/** The tracing of `config`. */
export function createOtelTracing(config: TracingConfig, logger: Logger): Tracing {
  const exporter = new OTLPTraceExporter({ url: config.otlp_endpoint });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      'service.name': config.service_name,
      'service.version': buildInfo().version,
    }),
    // Neither sampler reads attributes: a span gets them once it is known to be recorded, so the
    // unsampled requests (most, at a low ratio) never build them.
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.sample_ratio) }),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer('bh-gateway', buildInfo().version);
  const propagator = new W3CTraceContextPropagator();

  const handle = (span: Span, context: Context): SpanHandle & Placed => ({
    context,
    traceparent() {
      const carrier: Record<string, string> = {};
      propagator.inject(context, carrier, defaultTextMapSetter);
      return carrier.traceparent as string;
    },
    set: (attributes) => span.setAttributes(defined(attributes)),
  });

  return {
    request(req) {
      const parent = propagator.extract(ROOT_CONTEXT, req.headers, defaultTextMapGetter);
      const method = methodOf(req.method);
      const span = tracer.startSpan(method, { kind: SpanKind.SERVER }, parent);
      if (span.isRecording()) span.setAttributes(defined(serverAttributes(req, method)));
      const traceId = span.spanContext().traceId;
      const trace_: RequestTrace & Placed = {
        traceId,
        context: trace.setSpan(parent, span),
        end({ status, operation, client }) {
          span.updateName(`${method} ${operation}`);
          span.setAttributes({
            'http.response.status_code': status,
            'client.address': client,
            'gateway.operation': operation,
          });
          if (status >= 500) {
            span.setStatus({ code: SpanStatusCode.ERROR });
            span.setAttribute('error.type', String(status));
          }
          span.end();
        },
      };
      return trace_;
    },
    span(name, kind, attributes, parent, work) {
      const outer = contextOf(parent);
      const above = trace.getSpan(outer);
      // Under a span that is not sampled, no span would be recorded (parent-based sampling): none is
      // made, and the parent's context is what goes on (an outgoing `traceparent` names it).
      if (above !== undefined && (above.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) {
        return work(handle(above, outer));
      }
      const span = tracer.startSpan(
        name,
        { kind: kind === 'client' ? SpanKind.CLIENT : SpanKind.INTERNAL },
        outer,
      );
      if (span.isRecording()) span.setAttributes(defined(attributes));
      const failed = (err: unknown) => {
        span.setStatus({ code: SpanStatusCode.ERROR });
        span.setAttribute('error.type', errorType(err));
        span.end();
      };
      let result: ReturnType<typeof work>;
      try {
        result = work(handle(span, trace.setSpan(outer, span)));
      } catch (err) {
        failed(err);
        throw err;
      }
      if (result instanceof Promise) {
        return result.then(
          (value: unknown) => {
            span.end();
            return value;
          },
          (err: unknown) => {
            failed(err);
            throw err;
          },
        ) as typeof result;
      }
      span.end();
      return result;
    },
    async shutdown() {
      try {
        await provider.shutdown();
      } catch (err) {
        logger.warn({ err }, 'tracing: spans could not be sent on shutdown');
      }
    },
  };
}

/** The server span's attributes of `req` (HTTP semantic conventions): never the query or a header but the agent. */
function serverAttributes(req: IncomingMessage, method: string): SpanAttributes {
  const target = req.url ?? '';
  const q = target.indexOf('?');
  const agent = req.headers['user-agent'];
  return {
    'http.request.method': method,
    'http.request.method_original': method === '_OTHER' ? req.method : undefined,
    'url.path': q === -1 ? target : target.slice(0, q),
    'url.scheme': (req.socket as { encrypted?: boolean }).encrypted === true ? 'https' : 'http',
    'network.protocol.version': req.httpVersion,
    'network.peer.address': req.socket.remoteAddress,
    'user_agent.original': agent === undefined ? undefined : agent.slice(0, USER_AGENT),
  };
}

function methodOf(method: string | undefined): string {
  return method !== undefined && METHODS.has(method) ? method : '_OTHER';
}

/** `error.type` of a failed span: the catalogue error's reason or code, else the error's name. */
function errorType(err: unknown): string {
  const e = err as { reason?: unknown; code?: unknown; name?: unknown } | null;
  for (const v of [e?.reason, e?.code, e?.name]) if (typeof v === 'string' && v !== '') return v;
  return '_OTHER';
}

/** `attributes` without the undefined ones. */
function defined(attributes: SpanAttributes): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const k in attributes) {
    const v = attributes[k];
    if (v !== undefined) out[k] = v;
  }
  return out;
}
