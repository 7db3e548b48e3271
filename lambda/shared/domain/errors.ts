/** A dependency (DynamoDB, Kinesis, S3) still failing after the adapter's bounded retries. */
export class DependencyUnavailableError extends Error {
  override name = 'DependencyUnavailableError';
  constructor(
    readonly dependency: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * Publishing failed after its retries, but not necessarily for every record: the records at
 * `notWrittenIndexes` (positions in the published batch) are known to be absent from the stream (the
 * service refused them); the others were written or may have been (a timeout or a lost connection
 * leaves the outcome unknown).
 */
export class PublishIncompleteError extends DependencyUnavailableError {
  override name = 'PublishIncompleteError';
  constructor(
    dependency: string,
    message: string,
    readonly notWrittenIndexes: readonly number[],
    readonly total: number,
    options?: { cause?: unknown },
  ) {
    super(dependency, message, options);
  }

  /** How many records are known not to be on the stream. */
  get notWritten(): number {
    return this.notWrittenIndexes.length;
  }

  /** True when nothing of the batch can be on the stream. */
  get nothingWritten(): boolean {
    return this.notWritten === this.total;
  }
}
