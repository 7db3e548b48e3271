/** One record for the trace stream. */
export interface StreamRecord {
  partitionKey: string;
  data: Uint8Array;
}

/**
 * Puts records on the trace stream, all of them or an error; a `PublishIncompleteError` says how
 * many records are known not to be on the stream.
 */
export interface TraceSink {
  /**
   * Publishes every record or throws; `signal`, once aborted, stops the work (the request is at its deadline),
   * and no call runs past `deadlineAtMs` (epoch milliseconds).
   */
  publish(records: readonly StreamRecord[], options?: { signal?: AbortSignal; deadlineAtMs?: number }): Promise<void>;
}

/** Stores the body of a trace too large for one stream record. */
export interface OverflowStore {
  put(key: string, body: Uint8Array): Promise<{ bucket: string; key: string }>;
  /** Deletes objects `put` stored, a key already gone included; throws when one may remain. */
  delete(keys: readonly string[]): Promise<void>;
}
