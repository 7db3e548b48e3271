import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { MAX_SPANS_PER_TRACE } from '../lambda/ingest/core/validation/issue-codes.js';
import { LANDING_MEMORY_BOUNDS, landRecords } from '../lambda/landing/land-records.js';
import type { LandingRecord } from '../lambda/landing/landing-types.js';
import type { AcceptedSpan, AcceptedTrace, TraceContext } from '../lambda/shared/domain/trace.js';
import { encodeTraceRecord } from '../lambda/shared/domain/trace-record.js';
import { inFreshProcess } from './fresh-process.js';
import type { BenchResult } from './types.js';

/**
 * Peak memory of the landing for the worst batch the limits allow: every record a reference to a
 * trace of the most spans a trace may have (10,000) filling the 20 MiB ingest body, here 12 of them
 * (240 MiB of text, 120,000 span rows). The pending bounds flush long before the batch ends, so
 * more such records add time, not memory. Target: peak RSS at most 60 % of the consumer's 1,024 MB.
 */
const CONSUMER_MEMORY_MB = 1024;
const RECORDS = 12;
const BODY_LIMIT_BYTES = 20 * 1024 * 1024;

function worstTrace(): { context: TraceContext; trace: AcceptedTrace } {
  const now = new Date();
  const iso = now.toISOString().replace('Z', '000Z');
  const perSpan = Math.floor(BODY_LIMIT_BYTES / MAX_SPANS_PER_TRACE) - 450;
  const text = JSON.stringify('x'.repeat(perSpan - 2));
  const spans: AcceptedSpan[] = Array.from({ length: MAX_SPANS_PER_TRACE }, () => ({
    span_id: randomUUID(), parent_span_id: null, timestamp: iso, duration_ms: 1, name: 'step', kind: 'llm', status: 'ok', model: 'm',
    input_tokens: 1, output_tokens: 1, total_tokens: 2, input: text, output: '', attributes: '{"tags":["a"]}', error_message: null,
    session_id: 's', agent_id: 'a', agent_name: 'n', user_id: 'u',
  }));
  const trace: AcceptedTrace = {
    trace_id: randomUUID(), timestamp: iso, environment: 'prod', workspace_slug: '', duration_ms: 1, root_span_name: 'r', status: 'ok', model: 'm',
    input_tokens: 1, output_tokens: 1, total_tokens: 2, attributes: '{}', session_id: 's', agent_id: 'a', agent_name: 'n', user_id: 'u', spans,
  };
  return { context: { org_id: 'org', workspace_slug: '', api_key_id: 'key', request_id: 'req', received_at: iso }, trace };
}

async function measure(): Promise<void> {
  const { context, trace } = worstTrace();
  const body = encodeTraceRecord({ v: 1, context, trace });
  const before = process.resourceUsage().maxRSS / 1024;
  const records: LandingRecord[] = Array.from({ length: RECORDS }, (_, i) => ({
    shardId: 'shardId-000000000000',
    sequenceNumber: String(1000 + i),
    data: encodeTraceRecord({ v: 1, context: { ...context, record_id: `req/${i}` }, ref: { bucket: 'b', key: 'k', bytes: body.byteLength, trace_id: trace.trace_id } }),
    approximateArrivalTimestamp: new Date(),
  }));
  const started = performance.now();
  const summary = await landRecords({ store: { putObject: async () => undefined, getObject: async () => body } }, records);
  const seconds = (performance.now() - started) / 1000;
  const peakMb = process.resourceUsage().maxRSS / 1024;
  process.stdout.write(`${JSON.stringify({ peakMb, beforeMb: before, spanRows: summary.rows.spans, objects: summary.objectsWritten, seconds })}\n`);
}

/** `npm run bench -- landing-worst-case`. */
export async function runLandingWorstCaseBench(): Promise<BenchResult[]> {
  const result = inFreshProcess<{ peakMb: number; beforeMb: number; spanRows: number; objects: number; seconds: number }>(fileURLToPath(import.meta.url), ['--measure']);
  const peak = Math.round(result.peakMb);
  return [
    {
      group: 'landing-worst-case',
      metric: 'peak RSS landing the worst batch the limits allow',
      value: peak,
      unit: 'MB',
      baseline: CONSUMER_MEMORY_MB,
      ratio: Math.round((peak / CONSUMER_MEMORY_MB) * 100) / 100,
      target: '<= 0.6',
      note:
        `${RECORDS} references to traces of ${MAX_SPANS_PER_TRACE} spans and ~20 MiB each: ${result.spanRows} span rows in ${result.objects} objects, ` +
        `${Math.round(result.seconds)} s; bounds ${LANDING_MEMORY_BOUNDS.maxPendingSpanRows} span rows / ${LANDING_MEMORY_BOUNDS.maxPendingTextCharacters / 1024 / 1024} Mi characters pending; ` +
        `RSS before landing ${Math.round(result.beforeMb)} MB; baseline is the consumer's memory`,
    },
  ];
}

if (process.argv.includes('--measure')) await measure();
