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
    timestamp: isoTime(),
    formatters: { level: (label: string) => ({ level: label }) },
    redact: { paths: REDACT, censor: '[redacted]' },
  };
  // Standard output by default: a turn's lines share one write (see `stdout`).
  return pino(options, destination ?? stdout());
}

/**
 * pino's ISO time, the text made once per millisecond (lines of one millisecond share it): under
 * load several request lines are written each millisecond.
 */
function isoTime(): () => string {
  let last = -1;
  let text = '';
  return () => {
    const now = Date.now();
    if (now !== last) {
      last = now;
      text = `,"time":"${new Date(now).toISOString()}"`;
    }
    return text;
  };
}

/**
 * Resolves once the lines written so far are out, or after `ms`: called before the process exits, so
 * that exiting never waits on a synchronous flush (which, on a closed pipe, would retry for ever).
 */
export function flushLogs(logger: Logger, ms = 1_000): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    try {
      logger.flush(() => {
        clearTimeout(timer);
        resolve();
      });
    } catch {
      clearTimeout(timer);
      resolve();
    }
  });
}

/**
 * Standard output, a batch of lines per turn of the event loop. Under load a turn answers many
 * requests: their lines cost an array push each and share one write. Node writes standard output to
 * a file or (on Linux) a pipe synchronously, which costs less per line than handing each write to
 * libuv's thread pool, and a write of a turn's lines is one short syscall. When standard output goes away (a log shipper or a pipe reader that exits:
 * EPIPE), lines are dropped from then on: the gateway keeps serving and still stops when told.
 */
function stdout(): DestinationStream {
  const out = process.stdout;
  let closed = false;
  out.on('error', () => {
    closed = true;
  });
  let lines: string[] = [];
  let scheduled = false;
  const drain = () => {
    scheduled = false;
    if (lines.length === 0) return;
    const text = lines.length === 1 ? (lines[0] as string) : lines.join('');
    lines = [];
    if (!closed) out.write(text);
  };
  const stream = {
    write(line: string) {
      lines.push(line);
      if (!scheduled) {
        scheduled = true;
        setImmediate(drain);
      }
    },
    /** Writes what this turn gathered; calls back once standard output has taken it (`logger.flush`). */
    flush(cb?: (err?: Error) => void) {
      drain();
      if (closed || out.writableLength === 0) cb?.();
      else out.write('', () => cb?.());
    },
  };
  return stream as DestinationStream;
}
