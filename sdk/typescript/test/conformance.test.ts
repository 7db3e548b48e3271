import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { MAX_BODY_BYTES, MAX_TRACES_PER_BATCH, TraceIngest, type Answer, type Trace } from '../src/index.js';
import { Batch, Deliverer } from '../src/delivery.js';
import { Ledger } from '../src/ledger.js';
import { decide, parseRetryAfter, rejectedTraces } from '../src/policy.js';
import { conformance, Recorder } from './support.js';

// The shared vectors of sdk/conformance, which the Python SDK runs too.

interface Scenario {
  name: string;
  traces: number;
  each_status?: [number, string][];
  answers: ({ status: number | string; headers?: Record<string, string>; body?: unknown } | { failure: 'reset' | 'timeout' })[];
  requests: { traces: number[]; key: string }[];
  waits: number[];
  report: { sent: number; rejected: Record<string, number>; dropped: Record<string, number>; pending: number; retried: Record<string, number> };
}

it('keeps its defaults at the service limits of limits.json', () => {
  const limits = conformance<{ max_traces_per_batch: number; max_body_bytes: number }>('limits.json');
  assert.equal(MAX_TRACES_PER_BATCH, limits.max_traces_per_batch);
  assert.equal(MAX_BODY_BYTES, limits.max_body_bytes);
  const client = new TraceIngest({ apiKey: 'tik_x', baseUrl: 'http://127.0.0.1:9', serverless: true });
  assert.deepEqual([client.maxBatchTraces, client.maxBodyBytes], [limits.max_traces_per_batch, limits.max_body_bytes]);
});

function expand(scenarios: Scenario[]): Scenario[] {
  return scenarios.flatMap((scenario) => {
    if (!scenario.each_status) return [scenario];
    return scenario.each_status.map(([status, code]) => {
      const text = JSON.stringify(scenario).replace('"<each>"', String(status)).replaceAll('"<each>"', JSON.stringify(code));
      const concrete = JSON.parse(text) as Scenario;
      return { ...concrete, name: `${scenario.name} [${status}]` };
    });
  });
}

for (const file of ['retry-after.json', 'http-dates.json']) {
  describe(`Retry-After values (sdk/conformance/${file})`, () => {
    const vectors = conformance<{ now: string; cases: { header: string; seconds: number | null }[] }>(file);
    const now = Date.parse(vectors.now);
    assert.ok(vectors.cases.length > 0);
    for (const { header, seconds } of vectors.cases) {
      it(`${JSON.stringify(header)} means ${seconds === null ? 'the backoff' : `${seconds} s`}`, () => {
        assert.equal(parseRetryAfter(header, now) ?? null, seconds);
      });
    }
  });
}

describe('one answer, one decision (sdk/conformance/decisions.json)', () => {
  interface DecisionCase {
    name: string;
    answer: { status?: number | null; headers?: Record<string, string>; body?: unknown; failure?: 'reset' | 'timeout' };
    batch_size: number;
    attempt: number;
    jitter: number;
    decision: { action: string; delay_seconds: number; reason: string; detail: string };
  }
  const vectors = conformance<{ cases: DecisionCase[]; rejected_traces: { name: string; body: unknown; batch_size: number; found: [number, string, string][] }[] }>('decisions.json');
  assert.ok(vectors.cases.length > 0 && vectors.rejected_traces.length > 0);
  for (const { name, answer, batch_size, attempt, jitter, decision } of vectors.cases) {
    it(name, () => {
      const made = decide({ status: answer.status ?? null, headers: answer.headers ?? {}, body: answer.body ?? null, ...(answer.failure && { failure: answer.failure }) }, batch_size, attempt, jitter);
      assert.deepEqual([made.action, made.reason], [decision.action, decision.reason]);
      assert.ok(Math.abs(made.delaySeconds - decision.delay_seconds) < 1e-9, `delay ${made.delaySeconds}, not ${decision.delay_seconds}`);
      if (decision.action !== 'delivered') assert.equal(made.detail, decision.detail);
    });
  }
  for (const { name, body, batch_size, found } of vectors.rejected_traces) {
    it(`rejected traces: ${name}`, () => {
      assert.deepEqual(
        rejectedTraces(body, batch_size).map(({ index, code, detail }) => [index, code, detail]),
        found,
      );
    });
  }
});

describe('delivery decisions (sdk/conformance/delivery.json)', () => {
  const vectors = conformance<{ jitter: number; scenarios: Scenario[] }>('delivery.json');
  for (const scenario of expand(vectors.scenarios)) {
    it(scenario.name, async () => {
      const answers: Answer[] = scenario.answers.map((answer) =>
        'failure' in answer
          ? { status: null, headers: {}, body: null, failure: answer.failure }
          : {
              status: answer.status as number,
              headers: Object.fromEntries(Object.entries(answer.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value])),
              body: answer.body ?? null,
            },
      );
      const transport = new Recorder(answers);
      const waits: number[] = [];
      const ledger = new Ledger();
      const deliverer = new Deliverer({
        transport,
        apiKey: 'tik_x',
        ledger,
        sleep: async (seconds) => {
          waits.push(seconds);
          return true;
        },
        jitter: () => vectors.jitter,
      });
      const ids: string[] = Array.from({ length: scenario.traces }, () => randomUUID());
      ledger.handed += ids.length;
      await deliverer.deliver(Batch.of(ids.map((id) => ({ traceId: id, data: new TextEncoder().encode(`{"trace_id":"${id}"}`) }))));

      assert.deepEqual(
        transport.requests.map((request) => request.body.traces.map((trace) => ids.indexOf(trace.trace_id as string))),
        scenario.requests.map((request) => request.traces),
      );
      const keys = transport.requests.map((request) => request.headers['idempotency-key']);
      const labels = scenario.requests.map((request) => request.key);
      keys.forEach((key, i) => keys.forEach((other, j) => assert.equal(key === other, labels[i] === labels[j], `requests ${i} and ${j}`)));
      assert.equal(waits.length, scenario.waits.length);
      waits.forEach((wait, i) => assert.ok(Math.abs(wait - (scenario.waits[i] as number)) < 1e-9, `wait ${i}: ${wait}`));
      const { sent, rejected, dropped, pending, retried } = ledger.report();
      assert.deepEqual({ sent, rejected, dropped, pending, retried }, scenario.report);
    });
  }
});

class ScriptError extends Error {
  override name = 'ScriptError';
}

interface SpanStep {
  span: Record<string, unknown> & { name: string };
  set?: Record<string, unknown>;
  spans?: SpanStep[];
  raise?: string;
}
interface TraceStep {
  trace: Record<string, unknown> & { name: string };
  spans?: SpanStep[];
  raise?: string;
}

const camel = (fields: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(fields).map(([name, value]) => [name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()), value]));

async function runScript(client: TraceIngest, script: TraceStep[]): Promise<void> {
  const runSpans = async (trace: Trace, steps: SpanStep[]): Promise<void> => {
    for (const step of steps) {
      const { name, ...fields } = step.span;
      try {
        await trace.span(name, camel(fields), async (span) => {
          if (step.set) span.update(camel(step.set));
          await runSpans(trace, step.spans ?? []);
          if (step.raise) throw new ScriptError(step.raise);
        });
      } catch (error) {
        if (!(error instanceof ScriptError)) throw error;
      }
    }
  };
  for (const step of script) {
    const { name, ...fields } = step.trace;
    const error = step.raise ? new ScriptError(step.raise) : undefined;
    try {
      await client.trace(name, camel(fields), async (trace) => {
        await runSpans(trace, step.spans ?? []);
        if (error) throw error;
      });
    } catch (caught) {
      assert.equal(caught, error);
    }
  }
}

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function normalise(body: { traces: Record<string, unknown>[] }): unknown {
  const names = new Map<string, string>();
  const counts = { trace: 0, span: 0 };
  const placeholder = (kind: 'trace' | 'span', value: unknown) => {
    if (value === null) return null;
    assert.match(value as string, UUID);
    if (!names.has(value as string)) names.set(value as string, `<${kind}-${++counts[kind]}>`);
    return names.get(value as string);
  };
  for (const trace of body.traces) {
    trace.trace_id = placeholder('trace', trace.trace_id);
    const spans = trace.spans as Record<string, unknown>[];
    for (const item of [trace, ...spans]) {
      assert.match(item.timestamp as string, TIMESTAMP);
      assert.ok(typeof item.duration_ms === 'number' && item.duration_ms >= 0);
      item.timestamp = '<timestamp>';
      item.duration_ms = '<duration>';
    }
    for (const span of spans) {
      span.span_id = placeholder('span', span.span_id);
      span.parent_span_id = placeholder('span', span.parent_span_id);
    }
  }
  return body;
}

describe('requests on the wire (sdk/conformance/requests.json)', () => {
  const vectors = conformance<{
    headers: Record<string, string>;
    scenarios: { name: string; client: Record<string, unknown>; script: TraceStep[]; body: { traces: unknown[] } }[];
  }>('requests.json');
  for (const scenario of vectors.scenarios) {
    it(scenario.name, async () => {
      const transport = new Recorder();
      const { mask: maskSpec, ...options } = scenario.client as { mask?: Record<string, unknown> };
      const mask = maskSpec ? (field: string, value: unknown) => (field in maskSpec ? maskSpec[field] : value) : undefined;
      const client = new TraceIngest({ ...camel(options), transport, serverless: true, mask });
      await runScript(client, scenario.script);
      const report = await client.flush();
      assert.equal(transport.requests.length, 1);
      const request = transport.requests[0] as (typeof transport.requests)[number];
      for (const [name, value] of Object.entries(vectors.headers)) {
        const actual = request.headers[name] as string;
        if (value === '<uuid>') assert.match(actual, UUID);
        else if (value === '<trace-ingest-sdk>') assert.match(actual, /^trace-ingest-typescript\//);
        else assert.equal(actual, value, name);
      }
      assert.deepEqual(normalise(request.body), scenario.body);
      assert.equal(report.sent, scenario.body.traces.length);
      assert.equal(report.pending, 0);
    });
  }
});
