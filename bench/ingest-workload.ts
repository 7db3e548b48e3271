import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { composeIngest } from '../lambda/ingest/compose.js';
import type { StreamRecord } from '../lambda/ingest/core/publish/ports.js';
import { fakeTenancy } from '../devkit/fakes/fake-tenancy.js';

/** The most of these traces (~15.6 KB each) one request may carry under MAX_DECODED_BODY_BYTES (4 MiB): 500 of them are two requests. */
export const TRACES = 250;
export const SPANS = 8;

function words(n: number, seed: number): string {
  const vocabulary = ['the', 'agent', 'calls', 'a', 'tool', 'to', 'fetch', 'weather', 'for', 'Paris', 'and', 'returns', 'results', 'with', 'sources', 'über', 'naïve', '東京'];
  return Array.from({ length: n }, (_, i) => vocabulary[(i * 7 + seed) % vocabulary.length]).join(' ');
}

/** A realistic batch at the request-size ceiling: 250 traces × 8 spans with chat-style input/output JSON strings (~3.9 MB). */
export function realisticBatch(nowMs = Date.now()): string {
  const traces = Array.from({ length: TRACES }, (_, t) => ({
    trace_id: randomUUID(),
    timestamp: new Date(nowMs - t * 1000).toISOString(),
    environment: 'production',
    duration_ms: 1834.25,
    root_span_name: 'support-agent',
    status: 'ok',
    model: 'gpt-4o-2024-08-06',
    input_tokens: 2400,
    output_tokens: 610,
    total_tokens: 3010,
    attributes: JSON.stringify({ tags: ['prod', 'eu-west-1'], release: '2026.11.3', customer_tier: 'enterprise' }),
    session_id: `session-${t % 40}`,
    agent_id: 'agent-support',
    agent_name: 'Support agent',
    user_id: `user-${t % 97}`,
    spans: Array.from({ length: SPANS }, (_, s) => ({
      span_id: randomUUID(),
      parent_span_id: null,
      timestamp: new Date(nowMs - t * 1000 + s * 50).toISOString(),
      duration_ms: 210.5 + s,
      name: s % 2 ? 'search_docs' : 'chat.completions',
      kind: s % 2 ? 'tool' : 'llm',
      status: 'ok',
      model: 'gpt-4o-2024-08-06',
      input_tokens: 300,
      output_tokens: 76,
      total_tokens: 376,
      input: JSON.stringify({
        messages: [
          { role: 'system', content: words(70, s) },
          { role: 'user', content: words(60, t + s) },
        ],
        temperature: 0.2,
      }),
      output: JSON.stringify({ role: 'assistant', content: words(100, t * s), finish_reason: 'stop' }),
      attributes: JSON.stringify({ tags: ['retrieval', `step-${s}`], top_k: 5 }),
      error_message: null,
      session_id: `session-${t % 40}`,
      agent_id: 'agent-support',
      agent_name: 'Support agent',
      user_id: `user-${t % 97}`,
    })),
  }));
  return JSON.stringify({ traces });
}

/** The real ingest handler over in-memory fakes of AWS that accept everything; `onPublish` sees every record published. */
export function fakedIngestHandler(onPublish: (records: readonly StreamRecord[]) => void = () => undefined) {
  const { apiKey, tenancy } = fakeTenancy('bench', { minute: null, hour: null, day: null, month: null });
  const stats = { published: 0 };
  // Metrics are flushed once per request, not per trace; keep their EMF lines off the table.
  process.env.POWERTOOLS_METRICS_DISABLED = 'true';
  const handler = composeIngest({
    ports: {
      tenancy,
      rateLimiter: { reserve: async () => ({ allowed: true }), release: async () => undefined },
      sink: {
        publish: async (records: readonly StreamRecord[]) => {
          stats.published += records.length;
          onPublish(records);
        },
      },
      overflow: { put: async (k: string) => ({ bucket: 'b', key: k }), delete: async () => undefined },
    },
    idempotency: false,
    logger: new Logger({ serviceName: 'bench', logLevel: 'SILENT' }),
    metrics: new Metrics({ namespace: 'Bench', serviceName: 'bench' }),
  });
  return { handler, apiKey, stats };
}
