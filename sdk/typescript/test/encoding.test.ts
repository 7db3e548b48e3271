import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TraceIngest } from '../src/index.js';
import { isRecord } from '../src/policy.js';
import { conformance, Recorder } from './support.js';

interface EncodingCase {
  name: string;
  value: unknown;
  json: string;
}

/** The value a vector describes, in TypeScript's types (the notation: encoding-values.json's description). */
function decode(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(decode);
  if (!isRecord(value)) return value;
  if (Array.isArray(value.$map)) return new Map((value.$map as [unknown, unknown][]).map(([key, item]) => [decode(key), decode(item)]));
  if (Array.isArray(value.$set)) return new Set(value.$set.map(decode));
  if (typeof value.$number === 'string') return Number(value.$number);
  if (isRecord(value.$error)) {
    const { name, message, stack, cause } = value.$error as { name: string; message: string; stack: string; cause?: unknown };
    const error = 'cause' in value.$error ? new Error(message, { cause: decode(cause) }) : new Error(message);
    error.name = name;
    error.stack = stack;
    return error;
  }
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, decode(item)]));
}

/** The spans of the only request a serverless client made for one trace. */
async function sentSpans(body: (client: TraceIngest) => void): Promise<Record<string, unknown>[]> {
  const recorder = new Recorder();
  const client = new TraceIngest({ apiKey: 'tik_x', transport: recorder, serverless: true });
  body(client);
  const report = await client.flush();
  assert.equal(report.sent, 1, JSON.stringify(report));
  return recorder.requests[0]?.body.traces[0]?.spans as Record<string, unknown>[];
}

const cases = conformance<{ cases: EncodingCase[] }>('encoding-values.json').cases;

describe('encoding-values.json: the JSON text both SDKs send for a value', () => {
  assert.ok(cases.length >= 20);
  for (const { name, value, json } of cases) {
    it(name, async () => {
      const [span] = await sentSpans((client) => client.trace('t', (trace) => trace.span('s', { input: decode(value), attributes: { value: decode(value) } }, () => undefined)));
      assert.equal(span?.input, json);
      assert.equal(span?.attributes, `{"value":${json}}`);
    });
  }
});

it('sends input and output as they were when set, whatever happens to them afterwards', async () => {
  const [span, observed] = await sentSpans((client) =>
    client.trace('t', (trace) => {
      const messages = [{ role: 'user', content: 'hi' }];
      const reply = new Map([['text', 'hello']]);
      trace.span('llm', { input: messages }, (span) => {
        span.output = reply;
      });
      messages.push({ role: 'assistant', content: 'hello' });
      (messages[0] as { content: string }).content = 'changed';
      reply.set('late', 'x');
      const remember = client.observe((history: unknown[]) => history.length);
      const history: unknown[] = ['first'];
      remember(history);
      history.push('second');
    }),
  );
  assert.equal(span?.input, '[{"role":"user","content":"hi"}]');
  assert.equal(span?.output, '{"text":"hello"}');
  assert.equal(observed?.input, '[["first"]]');
});

it('reads back a copy of what will be sent, and a mask sees that copy', async () => {
  const seen: unknown[] = [];
  const recorder = new Recorder();
  const client = new TraceIngest({ apiKey: 'tik_x', transport: recorder, serverless: true, mask: (field, value) => (field === 'input' ? (seen.push(value), { masked: true }) : value) });
  client.trace('t', (trace) =>
    trace.span('s', (span) => {
      const input = { list: [1] };
      span.input = input;
      input.list.push(2);
      assert.deepEqual(span.input, { list: [1] });
      assert.notEqual(span.input, input);
    }),
  );
  await client.flush();
  assert.deepEqual(seen, [{ list: [1] }]);
  assert.equal(recorder.requests[0]?.body.traces[0]?.spans instanceof Array && (recorder.requests[0]?.body.traces[0]?.spans as Record<string, unknown>[])[0]?.input, '{"masked":true}');
});

it('drops a trace whose input holds a cycle, without throwing where the input was set', async () => {
  const recorder = new Recorder();
  const client = new TraceIngest({ apiKey: 'tik_x', transport: recorder, serverless: true, logger: () => undefined });
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  client.trace('t', (trace) => trace.span('s', (span) => (span.input = cyclic)));
  const report = await client.flush();
  assert.deepEqual(report.dropped, { not_serialisable: 1 });
  assert.equal(recorder.requests.length, 0);
});
