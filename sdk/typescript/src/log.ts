/** Where the SDK says what went wrong: a function (every message), or an object with `warn` and, for `debug: true`, `debug`. */
export type Logger = ((message: string) => void) | { warn(message: string): void; debug?(message: string): void };

/** Each cause is logged at most once in this window. */
export const LOG_EVERY_MS = 60_000;
const PREFIX = '[trace-ingest] ';

/**
 * The SDK's voice: warnings once per cause per minute (the first connection failure, each kind of final
 * rejection, each kind of drop, quarantined spool files), and with `debug` every request and answer.
 * A logger that throws is ignored: logging never raises into the caller.
 */
export class Log {
  private readonly last = new Map<string, number>();

  constructor(
    private readonly logger: Logger = (message) => console.warn(message),
    readonly verbose = false,
    private readonly clock: () => number = () => performance.now(),
  ) {}

  /** Logs `message` unless `cause` was logged less than a minute ago. */
  warn(cause: string, message: string): void {
    const now = this.clock();
    const last = this.last.get(cause);
    if (last !== undefined && now - last < LOG_EVERY_MS) return;
    this.last.set(cause, now);
    this.emit('warn', message);
  }

  /** Logs `message` only with `debug: true`. */
  debug(message: string): void {
    if (this.verbose) this.emit('debug', message);
  }

  private emit(level: 'warn' | 'debug', message: string): void {
    try {
      if (typeof this.logger === 'function') this.logger(PREFIX + message);
      else if (level === 'debug' && this.logger.debug) this.logger.debug(PREFIX + message);
      else this.logger.warn(PREFIX + message);
    } catch {
      // a logger that fails must not take the caller down with it
    }
  }
}
