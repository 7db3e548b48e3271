/** Thrown for a body that is not an `ExportTraceServiceRequest`, in either OTLP encoding. */
export class UndecodableRequestError extends Error {
  override name = 'UndecodableRequestError';
}
