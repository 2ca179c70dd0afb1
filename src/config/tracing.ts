/**
 * The `tracing` key (contract §10): OpenTelemetry spans exported over OTLP/HTTP. Absent: tracing is
 * off, and none of its code is loaded. Changing it takes a restart.
 */
import { z } from 'zod';
import { httpUrl, leaf, str } from './leaves.js';

/** A ratio written as a number (`0.25`) or, through `${env:}`/`${file:}`, as its text. */
const ratio = () =>
  leaf(z.number({ error: 'must be a number from 0 to 1' }).min(0).max(1), (t) =>
    /^\s*\d+(\.\d+)?\s*$/.test(t) ? Number(t) : t,
  );

export const tracingSchema = z.strictObject({
  /** Where spans are sent: the collector's OTLP/HTTP traces URL (`…/v1/traces`). */
  otlp_endpoint: httpUrl(),
  /** `service.name` of every span. */
  service_name: str(1).default('bh-gateway'),
  /** The share of new traces recorded; a client's sampled flag is honoured (parent-based). */
  sample_ratio: ratio().default(1),
});

/** The validated `tracing` key. */
export type TracingConfig = z.output<typeof tracingSchema>;
