/**
 * The part of a structured logger the use cases write to: a message and its fields. Powertools' `Logger`
 * fits, and so does a test's recorder; each use case names the levels it uses with `Pick`.
 */
export interface StructuredLogger {
  info(message: string, extra: Record<string, unknown>): void;
  warn(message: string, extra: Record<string, unknown>): void;
  error(message: string, extra: Record<string, unknown>): void;
}
