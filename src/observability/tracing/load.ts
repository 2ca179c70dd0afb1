/**
 * Loading the tracing: the OpenTelemetry SDK is imported here, on first use, and only when `tracing`
 * is configured (with tracing off, none of it is loaded).
 */
import type { TracingConfig } from '../../config/tracing.js';
import type { Logger } from '../logger.js';
import type { Tracing } from './tracing.js';

/** The tracing of `config`, or undefined when it is off. */
export async function loadTracing(
  config: TracingConfig | undefined,
  logger: Logger,
): Promise<Tracing | undefined> {
  if (config === undefined) return undefined;
  const { createOtelTracing } = await import('./otel.js');
  return createOtelTracing(config, logger);
}
