/**
 * The ports of the landing Lambda: the bucket it writes to and reads references from, and its log.
 * `S3LandingStore` implements the store; tests give fakes.
 */
import type { StructuredLogger } from '../shared/runtime/logger.js';

/** The referenced object does not exist: permanent, so the record is dead-lettered. */
export class ReferencedObjectNotFoundError extends Error {
  override name = 'ReferencedObjectNotFoundError';
}

/** The bucket the consumer writes to and reads references from. */
export interface LandingStore {
  putObject(key: string, body: Uint8Array, contentType: string): Promise<void>;
  /** Throws {@link ReferencedObjectNotFoundError} when the object does not exist. */
  getObject(bucket: string, key: string): Promise<Uint8Array>;
}

/** The part of a structured logger the use case needs (Powertools' `Logger` fits). */
export type LandingLogger = Pick<StructuredLogger, 'warn' | 'error'>;

/** Everything the landing use case is given. */
export interface LandingDeps {
  store: LandingStore;
  logger?: LandingLogger;
  /** Rows per Parquet row group, also the most rows the encoder holds at once. */
  rowsPerRowGroup?: number;
  /** Uploads in flight at once while the next object is encoded. */
  maxUploadsInFlight?: number;
  /** Span rows held before the pending groups are written out (see `LANDING_MEMORY_BOUNDS`). */
  maxPendingSpanRows?: number;
  /** Characters of span and trace text held before the pending groups are written out. */
  maxPendingTextCharacters?: number;
}
