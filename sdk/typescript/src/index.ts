export { TraceIngest, type TraceIngestOptions } from './client.js';
export type { DeliveryReport, Undelivered } from './ledger.js';
export { MAX_BODY_BYTES, MAX_TRACES_PER_BATCH } from './limits.js';
export { currentSpan, currentTrace, Span, Trace, type Mask, type SpanKind, type SpanOptions, type Status, type TraceOptions } from './tracing.js';
export type { Answer } from './policy.js';
export type { Transport } from './transport.js';
export type { Logger } from './log.js';
export type { SpoolSync } from './spool.js';
