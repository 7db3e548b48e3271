import { randomUUID } from 'node:crypto';
import type { TraceDraft } from '../../../lambda/ingest/core/draft.js';
import { CandidateValidation, type IdSource } from '../../../lambda/ingest/core/validation/validate-candidates.js';
import { encodeTrace } from '../../../lambda/ingest/core/publish/publish-traces.js';
import { decodeTraceRecord } from '../../../lambda/shared/domain/trace-record.js';
import { derivedIds } from '../../../lambda/shared/domain/derived-ids.js';
import { buildBatch, NOW_MS } from '../../../devkit/builders/trace-builders.js';

const NOW_MICROS = NOW_MS * 1000;
const CONTEXT = { org_id: 'org-a', api_key_id: 'key-a', request_id: 'req-1', received_at: '2026-11-22T12:00:00.000000Z' };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A batch whose traces and spans leave every id to the server. */
function batchWithoutIds() {
  const { traces } = buildBatch(3, {}, 2);
  return traces.map(({ trace_id: _t, ...trace }) => ({ ...trace, spans: (trace.spans as Record<string, unknown>[]).map(({ span_id: _s, ...span }) => span) }));
}

function idsOf(traces: unknown[], ids: IdSource) {
  const validation = new CandidateValidation(NOW_MICROS, ids);
  const candidates = traces.map((trace) => ({ trace, spansOnly: false, invalidSpan: 'rejects-trace' as const }));
  const accepted = [...validation.validTraces(candidates)].map((valid) => encodeTrace(CONTEXT, 'idem-abc', valid));
  expect(validation.errors).toEqual([]);
  return accepted.map(({ data }) => {
    const record = decodeTraceRecord(data);
    if (!('trace' in record)) throw new Error('expected an inline record');
    return { trace_id: record.trace.trace_id, span_ids: record.trace.spans.map((span) => span.span_id) };
  });
}

describe('server-generated ids', () => {
  it('are the same on a resend when derived from the request identity, so its copies collapse', () => {
    const traces = batchWithoutIds();
    const stable: IdSource = (index) => derivedIds(`idem-abc/${index}`);
    const first = idsOf(traces, stable);
    const resend = idsOf(traces, stable);
    expect(resend).toEqual(first);
    const all = first.flatMap(({ trace_id, span_ids }) => [trace_id, ...span_ids]);
    expect(new Set(all).size).toBe(all.length);
    for (const id of all) expect(id).toMatch(UUID);
  });

  it('are fresh per request otherwise', () => {
    const traces = batchWithoutIds();
    const random: IdSource = () => randomUUID;
    expect(idsOf(traces, random)[0]?.trace_id).not.toBe(idsOf(traces, random)[0]?.trace_id);
  });

  it('never replace ids the client sent', () => {
    const { traces } = buildBatch(2);
    const derived = idsOf(traces, (index) => derivedIds(`idem-abc/${index}`));
    expect(derived.map(({ trace_id }) => trace_id)).toEqual(traces.map((trace) => String(trace.trace_id).toLowerCase()));
  });
});

describe('derivedIds', () => {
  it('gives name-based (version 8, RFC 9562 variant) UUIDs, one sequence per seed', () => {
    const a = derivedIds('seed');
    const b = derivedIds('seed');
    const ids = [a(), a(), a()];
    expect([b(), b(), b()]).toEqual(ids);
    expect(new Set(ids).size).toBe(3);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(derivedIds('other')()).not.toBe(ids[0]);
  });
});

describe('CandidateValidation', () => {
  const ID = 'ABCDEF01-2345-4678-9ABC-DEF012345678';
  const span = (members: Record<string, unknown> = {}) => ({ timestamp: new Date(NOW_MS).toISOString(), name: 's', ...members });
  const trace = (members: Record<string, unknown> = {}) => ({ timestamp: new Date(NOW_MS).toISOString(), spans: [span()], ...members });
  function run(candidates: TraceDraft[]) {
    const validation = new CandidateValidation(NOW_MICROS, () => randomUUID);
    const valid = [...validation.validTraces(candidates)].map(({ index, trace: { trace_id, spans }, spansOnly }) => ({ index, trace_id, spans: spans.length, spansOnly }));
    return { valid, errors: validation.errors, droppedSpans: validation.droppedSpans };
  }
  const sent = (trace: unknown, spansOnly = false): TraceDraft => ({ trace, spansOnly, invalidSpan: 'rejects-trace' });

  it('yields each valid trace with its index and reports each rejected one with its index and trace_id as sent', () => {
    const { valid, errors, droppedSpans } = run([sent(trace({ trace_id: ID })), sent(trace({ trace_id: 'not-a-uuid' })), sent(trace({ trace_id: 5 })), sent(7), sent(trace(), true)]);
    expect(valid).toEqual([
      { index: 0, trace_id: ID.toLowerCase(), spans: 1, spansOnly: false },
      { index: 4, trace_id: expect.stringMatching(UUID), spans: 1, spansOnly: true },
    ]);
    expect(errors).toEqual([
      { index: 1, trace_id: 'not-a-uuid', issues: [{ path: '/trace_id', code: 'invalid_uuid', message: expect.any(String) }] },
      { index: 2, trace_id: null, issues: [{ path: '/trace_id', code: 'invalid_type', message: 'must be a string' }] },
      { index: 3, trace_id: null, issues: [{ path: '', code: 'not_an_object', message: 'must be a JSON object' }] },
    ]);
    expect(droppedSpans).toEqual([]);
  });

  it('quotes a long trace_id back cut to 256 characters', () => {
    const { errors } = run([sent(trace({ trace_id: 'x'.repeat(300) }))]);
    expect(errors.map((error) => error.trace_id)).toEqual([`${'x'.repeat(256)}…`]);
  });

  it('rejects a trace whose trace_id repeats one accepted earlier in the batch, in any case, naming the first', () => {
    const { valid, errors } = run([sent(trace({ trace_id: 'not-a-uuid' })), sent(trace({ trace_id: ID })), sent(trace({ trace_id: ID.toLowerCase() })), sent(trace({ trace_id: ID }))]);
    expect(valid.map(({ index }) => index)).toEqual([1]);
    expect(errors).toEqual([
      { index: 0, trace_id: 'not-a-uuid', issues: [expect.objectContaining({ code: 'invalid_uuid' })] },
      ...[2, 3].map((index) => ({
        index,
        trace_id: index === 2 ? ID.toLowerCase() : ID,
        issues: [{ path: '/trace_id', code: 'duplicate_trace_id', message: 'repeats the trace_id of trace 1, accepted earlier in this batch' }],
      })),
    ]);
  });

  it('records the spans a drops-span trace landed without, under the trace\'s index', () => {
    const dropsSpan = (t: unknown): TraceDraft => ({ trace: t, spansOnly: false, invalidSpan: 'drops-span' });
    const { valid, droppedSpans } = run([dropsSpan(trace()), dropsSpan(trace({ spans: [span(), span({ kind: 'LLM' })] }))]);
    expect(valid.map(({ index, spans }) => [index, spans])).toEqual([[0, 1], [1, 1]]);
    expect(droppedSpans).toEqual([{ index: 1, spans: [{ spanIndex: 1, issues: [{ path: '/kind', code: 'invalid_enum', message: expect.any(String) }] }] }]);
  });
});
