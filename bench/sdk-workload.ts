import type { TraceIngest } from '../sdk/typescript/src/index.js';

/** Spans per trace in the SDK bench: a plan, a retrieval, a model call and a tool call, and four more steps. */
export const SPANS_PER_TRACE = 8;

/** One realistic trace through the TypeScript SDK's API: 8 spans with JSON input and output, tokens and tags. */
export function sdkBenchTrace(client: Pick<TraceIngest, 'trace'>, n: number): void {
  client.trace('support-agent', { conversationId: `conv-${n % 100}`, userId: 'user-1', tags: ['bench'] }, (trace) => {
    for (let s = 0; s < SPANS_PER_TRACE; s++) {
      trace.span(`step-${s}`, { kind: s % 2 ? 'tool' : 'llm', model: 'gpt-4o', input: { question: 'Where is my refund?', step: s } }, (span) => {
        span.output = { text: 'Refunds take five working days.', step: s };
        span.inputTokens = 120;
        span.outputTokens = 30;
      });
    }
  });
}
