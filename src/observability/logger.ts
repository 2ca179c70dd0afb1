/**
 * The pino logger. Secrets never reach a line: credentials are redacted by path, and request
 * lines are built from chosen fields (never whole headers or the query string).
 */
import { type DestinationStream, type Logger, pino } from 'pino';

export type { Logger };

const REDACT = [
  'authorization',
  'signature',
  'token',
  'key',
  'secret',
  '*.authorization',
  '*.signature',
  '*.token',
  '*.key',
  '*.secret',
  'headers.authorization',
  'headers.signature',
  'req.headers.authorization',
  'req.headers.signature',
];

/** A JSON logger at `level` writing to `destination` (stdout by default). */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = {
    level,
    base: undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
    redact: { paths: REDACT, censor: '[redacted]' },
  };
  // Asynchronous writes to stdout: a line per request must not cost a write(2) on the event loop;
  // lines written while one write is under way go out together. pino flushes them on exit.
  return pino(options, destination ?? pino.destination({ dest: 1, sync: false }));
}
