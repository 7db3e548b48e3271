export { TraceIngest } from './client.js';
export { MAX_BODY_BYTES, MAX_TRACES_PER_BATCH } from './limits.js';
export { currentSpan, currentTrace, Span, Trace } from './tracing.js';
