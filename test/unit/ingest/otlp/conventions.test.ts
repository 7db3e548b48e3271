import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { DecodedJson, type DecodedJsonText, JsonOrText, type SpanDraft, type TraceMembersDraft } from '../../../../lambda/ingest/core/draft.js';
import { FIELD_READERS, FLATTENED_PREFIXES, KIND_LOOKUPS, LLM_WHEN_PRESENT } from '../../../../lambda/ingest/otlp/conventions.js';
import { draftExport } from '../../../../lambda/ingest/otlp/map-export.js';
import { decodeExportRequestJson } from '../../../../lambda/ingest/otlp/otlp-json.js';

/**
 * Golden fixtures recorded from the real libraries (test/fixtures/otlp/recorded/, see its README): each library's
 * OTLP/JSON export, as its exporter serialises it, mapped span by span and field by field.
 */

const RECORDED = join(__dirname, '../../../fixtures/otlp/recorded');
// Recording shifted every fixture's earliest span start to 1_700_000_000_000_000_000 ns.
const RECORDED_AT_MICROS = 1_700_000_000_000_000;

interface RecordedFixture {
  recordedWith: { library: string; version: string; script: string };
  export: { resourceSpans: { scopeSpans: { spans: { name: string; attributes: { key: string }[] }[] }[] }[] };
}

const readFixture = (name: string): RecordedFixture => JSON.parse(readFileSync(join(RECORDED, name), 'utf8')) as RecordedFixture;

function mapFixture(name: string): { trace: TraceMembersDraft; spans: SpanDraft[] } {
  const { traces, rejected } = draftExport(decodeExportRequestJson(JSON.stringify(readFixture(name).export)), undefined, RECORDED_AT_MICROS);
  expect(rejected).toEqual([]);
  expect(traces).toHaveLength(1);
  // The OTLP route builds TraceMembersDraft objects; the draft types them `unknown` until validation.
  const trace = traces[0]!.draft.trace as TraceMembersDraft;
  return { trace, spans: trace.spans };
}

/** A JSON-text member as the mapping hands it over: kept as sent (`text`), or a value the mapping built (`value`). */
const content = (member: DecodedJsonText) => (member instanceof JsonOrText ? { text: member.text } : member instanceof DecodedJson ? { value: member.value } : member);
const text = (sent: string) => ({ text: sent });
const json = (sent: unknown) => ({ text: JSON.stringify(sent) });
const value = (built: unknown) => ({ value: built });

const fieldsOf = (span: SpanDraft) => ({
  name: span.name,
  kind: span.kind,
  status: span.status,
  error_message: span.error_message,
  model: span.model,
  tokens: [span.input_tokens, span.output_tokens, span.total_tokens],
  input: content(span.input),
  output: content(span.output),
  session_id: span.session_id,
  user_id: span.user_id,
  agent: [span.agent_id, span.agent_name],
});

const traceFieldsOf = (trace: TraceMembersDraft) => ({
  root_span_name: trace.root_span_name,
  status: trace.status,
  model: trace.model,
  tokens: [trace.input_tokens, trace.output_tokens, trace.total_tokens],
  session_id: trace.session_id,
  user_id: trace.user_id,
  agent: [trace.agent_id, trace.agent_name],
});

const none = { session_id: '', user_id: '' };
const session = { session_id: 'session-42', user_id: 'user-7' };
const ok = { status: 'ok', error_message: null };
const noAgent = ['', ''];
const nothing = { model: '', tokens: [0, 0, 0] };
const SYSTEM = 'You answer weather questions.';
const QUESTION = 'What is the weather in Paris?';
const ANSWER = 'It is 21°C and sunny in Paris.';
const WEATHER = { city: 'Paris', celsius: 21, sky: 'sunny' };

describe('the recorded fixtures', () => {
  const names = readdirSync(RECORDED).filter((name) => name.endsWith('.json'));

  it('are there, each naming the library and the version it was recorded from, in its file name too', () => {
    expect(names.length).toBeGreaterThanOrEqual(7);
    for (const name of names) {
      const { recordedWith } = readFixture(name);
      expect(recordedWith.library).not.toBe('');
      expect(name).toContain(recordedWith.version);
      expect(recordedWith.script).not.toBe('');
    }
  });

  it('keep every attribute no field read: what left the attributes is exactly what the registry reads', () => {
    const registryKeys = new Set(Object.values(FIELD_READERS).flatMap((readers) => readers.flatMap((reader) => ('key' in reader ? [reader.key] : []))));
    ['input.mime_type', 'output.mime_type', 'gen_ai.system_instructions'].forEach((key) => registryKeys.add(key));
    const readByRegistry = (key: string) => registryKeys.has(key) || FLATTENED_PREFIXES.some((prefix) => key.startsWith(prefix));
    let checked = 0;
    for (const name of names) {
      const recorded = readFixture(name).export.resourceSpans.flatMap((resource) => resource.scopeSpans.flatMap((scope) => scope.spans));
      const { spans } = mapFixture(name);
      expect(spans).toHaveLength(recorded.length);
      recorded.forEach((sent, index) => {
        const left = spans[index]!.attributes.value as Record<string, unknown>;
        for (const { key } of sent.attributes) {
          checked++;
          if (!(key in left)) expect([name, sent.name, key, readByRegistry(key)]).toEqual([name, sent.name, key, true]);
        }
      });
    }
    expect(checked).toBeGreaterThan(300);
  });
});

describe('Vercel AI SDK 6 (ai 6.0.333, experimental_telemetry)', () => {
  const prompt = [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: [{ type: 'text', text: QUESTION }] },
  ];
  const toolCallMessage = { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'call_1', toolName: 'weather', input: { city: 'Paris' } }] };
  const step1 = {
    name: 'ai.generateText.doGenerate',
    kind: 'llm',
    ...ok,
    model: 'mock-model-1-2026',
    tokens: [20, 8, 28],
    input: json(prompt),
    output: json([{ toolCallId: 'call_1', toolName: 'weather', input: '{"city":"Paris"}' }]),
    ...session,
    agent: noAgent,
  };
  const root = {
    name: 'ai.generateText',
    kind: 'agent',
    ...ok,
    model: 'mock-model-1',
    tokens: [60, 20, 80],
    input: json({ system: SYSTEM, prompt: QUESTION }),
    output: text(ANSWER),
    ...session,
    agent: noAgent,
  };

  it('reads ai.prompt(.messages), ai.response.text/.toolCalls, ai.model.id, ai.usage.*, ai.toolCall.args/.result and the telemetry metadata', () => {
    const { trace, spans } = mapFixture('vercel-ai-6.0.333.json');
    expect(spans.map(fieldsOf)).toEqual([
      step1,
      { name: 'ai.toolCall', kind: 'tool', ...ok, ...nothing, input: text('{"city":"Paris"}'), output: json(WEATHER), ...session, agent: noAgent },
      {
        ...step1,
        tokens: [40, 12, 52],
        input: json([
          ...prompt,
          toolCallMessage,
          { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'call_1', toolName: 'weather', output: { type: 'json', value: WEATHER } }] },
        ]),
        output: text(ANSWER),
      },
      root,
    ]);
    expect(traceFieldsOf(trace)).toEqual({ root_span_name: 'ai.generateText', status: 'ok', model: 'mock-model-1', tokens: [60, 20, 80], ...session, agent: noAgent });
  });

  it('marks a failing tool call an error with its exception, and leaves its result empty', () => {
    const { spans } = mapFixture('vercel-ai-6.0.333-tool-error.json');
    expect(fieldsOf(spans[1]!)).toEqual({
      name: 'ai.toolCall',
      kind: 'tool',
      status: 'error',
      error_message: 'weather service down for Paris',
      ...nothing,
      input: text('{"city":"Paris"}'),
      output: '',
      ...session,
      agent: noAgent,
    });
    expect(fieldsOf(spans[3]!)).toEqual(root);
  });
});

describe('Vercel AI SDK 7 (ai 7.0.185 with @ai-sdk/otel 1.0.185)', () => {
  const instructions = [{ type: 'text', content: SYSTEM }];
  const question = { role: 'user', parts: [{ type: 'text', content: QUESTION }] };
  const toolCall = { type: 'tool_call', id: 'call_1', name: 'weather', arguments: { city: 'Paris' } };
  const step = (n: number) => ({ name: `step ${n}`, kind: 'chain', ...ok, ...nothing, input: '', output: '', ...session, agent: noAgent });
  const chat = {
    name: 'chat mock-model-1',
    kind: 'llm',
    ...ok,
    model: 'mock-model-1-2026',
    tokens: [20, 8, 28],
    // gen_ai.system_instructions goes in front of gen_ai.input.messages as one system message.
    input: value([{ role: 'system', parts: instructions }, question]),
    output: json([{ role: 'assistant', parts: [toolCall], finish_reason: 'tool_call' }]),
    ...none,
    agent: noAgent,
  };

  it('reads gen_ai.tool.call.arguments/.result on execute_tool, gen_ai.system_instructions, agent_step, and the included runtime context', () => {
    const { trace, spans } = mapFixture('vercel-ai-7.0.185-ai-sdk-otel-1.0.185.json');
    const response = { type: 'tool_call_response', id: 'call_1', response: WEATHER };
    expect(spans.map(fieldsOf)).toEqual([
      chat,
      { name: 'execute_tool weather', kind: 'tool', ...ok, ...nothing, input: text('{"city":"Paris"}'), output: json(WEATHER), ...none, agent: noAgent },
      step(1),
      {
        ...chat,
        tokens: [40, 12, 52],
        input: value([{ role: 'system', parts: instructions }, question, { role: 'assistant', parts: [toolCall] }, { role: 'tool', parts: [response] }]),
        output: json([{ role: 'assistant', parts: [{ type: 'text', content: ANSWER }], finish_reason: 'stop' }]),
      },
      step(2),
      {
        name: 'invoke_agent weather-answer',
        kind: 'agent',
        ...ok,
        model: 'mock-model-1',
        tokens: [60, 20, 80],
        input: value([{ role: 'system', parts: instructions }, question]),
        output: json([{ role: 'assistant', parts: [toolCall, response, { type: 'text', content: ANSWER }], finish_reason: 'stop' }]),
        ...session,
        agent: ['', 'weather-answer'],
      },
    ]);
    expect(traceFieldsOf(trace)).toEqual({ root_span_name: 'invoke_agent weather-answer', status: 'ok', model: 'mock-model-1', tokens: [60, 20, 80], ...session, agent: ['', 'weather-answer'] });
  });

  it('marks a failing execute_tool an error with its status message', () => {
    const { spans } = mapFixture('vercel-ai-7.0.185-ai-sdk-otel-1.0.185-tool-error.json');
    expect(fieldsOf(spans[1]!)).toEqual({
      name: 'execute_tool weather',
      kind: 'tool',
      status: 'error',
      error_message: 'weather service down for Paris',
      ...nothing,
      input: text('{"city":"Paris"}'),
      output: '',
      ...none,
      agent: noAgent,
    });
  });
});

describe('OpenLLMetry / Traceloop', () => {
  const tool = { name: 'weather.tool', kind: 'tool', ...ok, ...nothing, input: json({ args: [], kwargs: { city: 'Paris' } }), output: json(WEATHER), ...session, agent: noAgent };
  const workflow = {
    name: 'weather_answer.workflow',
    kind: 'chain',
    ...ok,
    ...nothing,
    input: json({ args: [QUESTION], kwargs: {} }),
    output: json('It is 21°C and sunny in Paris'),
    ...session,
    agent: noAgent,
  };
  const traceRow = { root_span_name: 'weather_answer.workflow', status: 'ok', model: 'gpt-4o-mini-2024-07-18', tokens: [31, 9, 40], ...session, agent: noAgent };
  const userContent = `${QUESTION} ${JSON.stringify(WEATHER)} Paris`;

  it('0.27: reads traceloop.entity.input/.output and the association properties; its OpenAI span is GenAI 1.37+', () => {
    const { trace, spans } = mapFixture('traceloop-node-server-sdk-0.27.0.json');
    expect(spans.map(fieldsOf)).toEqual([
      tool,
      workflow,
      {
        name: 'chat gpt-4o-mini',
        kind: 'llm',
        ...ok,
        model: 'gpt-4o-mini-2024-07-18',
        tokens: [31, 9, 40],
        input: json([
          { role: 'system', parts: [{ type: 'text', content: SYSTEM }] },
          { role: 'user', parts: [{ type: 'text', content: userContent }] },
        ]),
        output: json([{ role: 'assistant', finish_reason: 'stop', parts: [{ type: 'text', content: 'It is 21°C and sunny in Paris' }] }]),
        ...session,
        agent: noAgent,
      },
    ]);
    expect(traceFieldsOf(trace)).toEqual(traceRow);
  });

  it('0.22.8 (pinned: the last release to send GenAI <= 1.36): flattened gen_ai.prompt/completion, prompt_tokens, llm.usage.total_tokens', () => {
    const { trace, spans } = mapFixture('traceloop-node-server-sdk-0.22.8-instrumentation-openai-0.22.5.json');
    expect(spans.map(fieldsOf)).toEqual([
      tool,
      workflow,
      {
        name: 'openai.chat',
        kind: 'llm',
        ...ok,
        model: 'gpt-4o-mini-2024-07-18',
        tokens: [31, 9, 40],
        input: value([
          { role: 'system', content: SYSTEM },
          { role: 'user', content: userContent },
        ]),
        output: value([{ finish_reason: 'stop', role: 'assistant', content: 'It is 21°C and sunny in Paris' }]),
        ...session,
        agent: noAgent,
      },
    ]);
    expect(traceFieldsOf(trace)).toEqual(traceRow);
  });
});

describe('OpenInference (@arizeai/openinference-instrumentation-openai 4.2.7, openinference-core 2.7.1)', () => {
  it('reads embedding.model_name, retrieval.documents.*, llm.*, input/output.value and session.id/user.id', () => {
    const { trace, spans } = mapFixture('openinference-instrumentation-openai-4.2.7.json');
    const request = { model: 'gpt-4o-mini', messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: `${QUESTION}\nParis weather today: 21°C, sunny.` }] };
    const response = {
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 1700000000,
      model: 'gpt-4o-mini-2024-07-18',
      choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: ANSWER } }],
      usage: { prompt_tokens: 31, completion_tokens: 9, total_tokens: 40 },
    };
    expect(spans.map(fieldsOf)).toEqual([
      { name: 'OpenAI Embeddings', kind: 'llm', ...ok, model: 'text-embedding-3-small', tokens: [0, 0, 0], input: text(QUESTION), output: '', ...session, agent: noAgent },
      { name: 'OpenAI Chat Completions', kind: 'llm', ...ok, model: 'gpt-4o-mini-2024-07-18', tokens: [31, 9, 40], input: json(request), output: json(response), ...session, agent: noAgent },
      {
        name: 'weather-docs',
        kind: 'retriever',
        ...ok,
        ...nothing,
        input: json([QUESTION, []]),
        output: value([
          { content: 'Paris weather today: 21°C, sunny.', id: 'doc-paris', metadata: '{"source":"weather-feed"}', score: 0.92 },
          { content: 'Lyon weather today: 18°C, cloudy.', id: 'doc-lyon', score: 0.41 },
        ]),
        ...session,
        agent: noAgent,
      },
      { name: 'weather-agent', kind: 'agent', ...ok, ...nothing, input: text(QUESTION), output: text(ANSWER), ...session, agent: noAgent },
    ]);
    // The root has no model and no tokens: the trace takes the first span's model and sums the spans' tokens.
    expect(traceFieldsOf(trace)).toEqual({ root_span_name: 'weather-agent', status: 'ok', model: 'text-embedding-3-small', tokens: [31, 9, 40], ...session, agent: noAgent });
  });
});

describe('the registry', () => {
  it('asks for each kind attribute once, the GenAI operation first, and falls back to llm on gen_ai.system and llm.request.type', () => {
    expect(KIND_LOOKUPS.map((lookup) => lookup.key)).toEqual(['gen_ai.operation.name', 'openinference.span.kind', 'traceloop.span.kind', 'ai.operationId']);
    expect(KIND_LOOKUPS[0]?.kinds.get('agent_step')).toBe('chain');
    expect(LLM_WHEN_PRESENT).toEqual(['gen_ai.system', 'llm.request.type']);
  });

  it('reads a key two sources share once, at the place of the first', () => {
    expect(FIELD_READERS.user_id.map((reader) => ('key' in reader ? reader.key : ''))).toEqual([
      'user.id',
      'enduser.id',
      'traceloop.association.properties.user_id',
      'ai.settings.context.userId',
      'ai.telemetry.metadata.userId',
    ]);
  });
});

describe('reading rules', () => {
  type Attribute = [string, string | number];
  const mapSpan = (attributes: Attribute[]) => {
    const span = {
      traceId: 'a'.repeat(32),
      spanId: '1'.repeat(16),
      name: 'span',
      startTimeUnixNano: '1700000000000000000',
      attributes: attributes.map(([key, sent]) => ({ key, value: typeof sent === 'string' ? { stringValue: sent } : { intValue: String(sent) } })),
    };
    const { traces } = draftExport(decodeExportRequestJson(JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [span] }] }] })), undefined, RECORDED_AT_MICROS);
    const mapped = (traces[0]!.draft.trace as TraceMembersDraft).spans[0]!;
    return { fields: fieldsOf(mapped), left: Object.keys(mapped.attributes.value as object).filter((key) => !key.startsWith('otel.')) };
  };

  it('keeps a span of unknown keys whole, as custom', () => {
    const { fields, left } = mapSpan([
      ['vendor.prompt', 'hi'],
      ['ai.telemetry.metadata.tenant', 't-1'],
      ['gen_ai.prompt_x.0.role', 'user'],
    ]);
    expect(fields).toEqual({ name: 'span', kind: 'custom', ...ok, ...nothing, input: '', output: '', ...none, agent: noAgent });
    expect(left).toEqual(['vendor.prompt', 'ai.telemetry.metadata.tenant', 'gen_ai.prompt_x.0.role']);
  });

  it('puts system instructions alone in front as a system message, and leaves them when the messages are not a JSON list', () => {
    const instructions = [{ type: 'text', content: 'Be brief.' }];
    expect(mapSpan([['gen_ai.system_instructions', JSON.stringify(instructions)]]).fields.input).toEqual(value([{ role: 'system', parts: instructions }]));
    const notAList = mapSpan([
      ['gen_ai.system_instructions', JSON.stringify(instructions)],
      ['gen_ai.input.messages', 'plain prompt'],
    ]);
    expect(notAList.fields.input).toEqual(text('plain prompt'));
    expect(notAList.left).toEqual(['gen_ai.system_instructions']);
    // Instructions that are not a list are not instructions: the messages are read as sent.
    const oddInstructions = mapSpan([
      ['gen_ai.system_instructions', 'Be brief.'],
      ['gen_ai.input.messages', '[]'],
    ]);
    expect([oddInstructions.fields.input, oddInstructions.left]).toEqual([text('[]'), ['gen_ai.system_instructions']]);
  });

  it('asks the next reader when an AI SDK content attribute is empty', () => {
    const { fields, left } = mapSpan([
      ['ai.operationId', 'ai.generateText.doGenerate'],
      ['ai.response.text', ''],
      ['ai.response.toolCalls', '[{"toolCallId":"c"}]'],
    ]);
    expect([fields.kind, fields.output]).toEqual(['llm', text('[{"toolCallId":"c"}]')]);
    expect(left).toEqual(['ai.operationId', 'ai.response.text']);
  });

  it('lets the earlier source win where two disagree, and keeps the loser in the attributes', () => {
    const { fields, left } = mapSpan([
      ['ai.usage.inputTokens', 7],
      ['gen_ai.usage.input_tokens', 5],
      ['ai.telemetry.metadata.sessionId', 'from-ai'],
      ['session.id', 'from-otel'],
      ['traceloop.association.properties.session_id', 'from-traceloop'],
    ]);
    expect([fields.tokens, fields.session_id]).toEqual([[5, 0, 5], 'from-otel']);
    expect(left).toEqual(['ai.usage.inputTokens', 'ai.telemetry.metadata.sessionId', 'traceloop.association.properties.session_id']);
  });

  it('rebuilds each flattened list from its own keys only, in index order', () => {
    const { fields, left } = mapSpan([
      ['openinference.span.kind', 'RETRIEVER'],
      ['retrieval.documents.1.document.id', 'b'],
      ['retrieval.documents.0.document.id', 'a'],
      ['llm.input_messages.0.message.content', 'q'],
      ['retrieval.documentsX.0.id', 'not-a-document'],
    ]);
    expect([fields.kind, fields.input, fields.output]).toEqual(['retriever', value([{ content: 'q' }]), value([{ id: 'a' }, { id: 'b' }])]);
    expect(left).toEqual(['openinference.span.kind', 'retrieval.documentsX.0.id']);
  });
});
