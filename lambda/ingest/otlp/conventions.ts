import type { SpanKind } from '../../shared/domain/trace.js';

/**
 * The registry of conventions the OTLP route reads: one table per source, saying which attribute (or event) each of
 * our span fields is taken from. {@link CONVENTION_PRECEDENCE} orders the tables; the readers of a field are the
 * readers of every table in that order, concatenated once at module load ({@link FIELD_READERS}), and every key they
 * read is indexed in one table ({@link KEY_TABLE}): mapping a span looks each of its keys up once, then asks only the
 * readers from the first whose key is there (no regular expression, no lookup of keys the span lacks, whatever the
 * number of sources). The first reader that finds a value wins and takes its attribute; every attribute no reader took
 * stays in the span's `attributes`, so an unknown key never drops a span.
 */

/** Our span fields read from attributes (status and error come from the span's status and `exception` event). */
export type ConventionField =
  | 'model'
  | 'input_tokens'
  | 'output_tokens'
  | 'total_tokens'
  | 'input'
  | 'output'
  | 'session_id'
  | 'user_id'
  | 'agent_id'
  | 'agent_name'
  | 'environment';

/** How one reader finds its value. */
export type Reader =
  /** A non-empty string attribute. */
  | { read: 'string'; key: string }
  /** A non-negative safe integer, or such a decimal string. */
  | { read: 'count'; key: string }
  /**
   * Any value, stored as JSON text: a string as sent (JSON text when it parses), any other value as JSON;
   * `alsoTakes` (a mime type beside it) is taken with it.
   */
  | { read: 'json'; key: string; alsoTakes?: string }
  /** As `json`, but an empty string is no value (the next reader is asked). */
  | { read: 'content'; key: string }
  /**
   * The GenAI message list, with the system instructions (kept apart since semconv 1.37) put in front of it as a
   * `{ role: 'system', parts }` message, the shape older versions sent inside the list.
   */
  | { read: 'messages-with-instructions'; key: string; instructions: string }
  /** The attribute `key` on the first event named `event`. */
  | { read: 'event-attribute'; event: string; key: string }
  /** Flattened lists (`gen_ai.prompt.<n>.<field>`) rebuilt as an array of objects, `strip` cut from each field. */
  | { read: 'flattened'; prefix: string; strip?: string }
  /** One message per event of these names, `{ role, ...attributes }` (the role from the `gen_ai.<role>.message` name). */
  | { read: 'message-events'; events: readonly string[] };

/** An attribute whose value names the span's kind. */
export interface KindRule {
  key: string;
  kinds: Readonly<Record<string, SpanKind>>;
  /** Values compared upper-cased (OpenInference's kinds are upper-case, some senders lower-case them). */
  upperCase?: boolean;
}

export type ConventionSource = 'otel-genai' | 'otel-genai-1.36' | 'otel-general' | 'openinference' | 'openllmetry' | 'vercel-ai-7' | 'vercel-ai-6';

/** One source's conventions: where it defines each field. */
export interface ConventionTable {
  source: ConventionSource;
  /** The source's column heading in docs/api.md. */
  label: string;
  /** What it is and the version its keys follow. */
  follows: string;
  kind?: readonly KindRule[];
  /** Kind `llm` when any of these attributes is a string (an LLM span that names no operation). */
  llmWhenPresent?: readonly string[];
  fields: Partial<Record<ConventionField, readonly Reader[]>>;
}

// https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/ (1.37 and later): messages as JSON attributes,
// system instructions apart, tool call arguments and result on `execute_tool` spans.
const OTEL_GENAI: ConventionTable = {
  source: 'otel-genai',
  label: 'OTel GenAI 1.37+',
  follows: 'OpenTelemetry GenAI semantic conventions 1.37 and later (1.40)',
  kind: [
    {
      key: 'gen_ai.operation.name',
      kinds: { chat: 'llm', text_completion: 'llm', generate_content: 'llm', embeddings: 'llm', execute_tool: 'tool', invoke_agent: 'agent', create_agent: 'agent' },
    },
  ],
  fields: {
    model: [
      { read: 'string', key: 'gen_ai.response.model' },
      { read: 'string', key: 'gen_ai.request.model' },
    ],
    input_tokens: [{ read: 'count', key: 'gen_ai.usage.input_tokens' }],
    output_tokens: [{ read: 'count', key: 'gen_ai.usage.output_tokens' }],
    input: [
      { read: 'messages-with-instructions', key: 'gen_ai.input.messages', instructions: 'gen_ai.system_instructions' },
      { read: 'event-attribute', event: 'gen_ai.client.inference.operation.details', key: 'gen_ai.input.messages' },
      { read: 'content', key: 'gen_ai.tool.call.arguments' },
    ],
    output: [
      { read: 'json', key: 'gen_ai.output.messages' },
      { read: 'event-attribute', event: 'gen_ai.client.inference.operation.details', key: 'gen_ai.output.messages' },
      { read: 'content', key: 'gen_ai.tool.call.result' },
    ],
    session_id: [{ read: 'string', key: 'gen_ai.conversation.id' }],
    agent_id: [{ read: 'string', key: 'gen_ai.agent.id' }],
    agent_name: [{ read: 'string', key: 'gen_ai.agent.name' }],
  },
};

// Up to semconv 1.36: the prompt and completion flattened into attributes, or sent as one event per message.
const OTEL_GENAI_1_36: ConventionTable = {
  source: 'otel-genai-1.36',
  label: 'OTel GenAI ≤ 1.36',
  follows: 'OpenTelemetry GenAI semantic conventions up to 1.36 (and OpenLLMetry before 0.27)',
  llmWhenPresent: ['gen_ai.system'],
  fields: {
    input_tokens: [{ read: 'count', key: 'gen_ai.usage.prompt_tokens' }],
    output_tokens: [{ read: 'count', key: 'gen_ai.usage.completion_tokens' }],
    input: [
      { read: 'flattened', prefix: 'gen_ai.prompt.' },
      { read: 'message-events', events: ['gen_ai.system.message', 'gen_ai.user.message', 'gen_ai.assistant.message', 'gen_ai.tool.message'] },
      { read: 'json', key: 'gen_ai.prompt' },
    ],
    output: [
      { read: 'flattened', prefix: 'gen_ai.completion.' },
      { read: 'message-events', events: ['gen_ai.choice'] },
      { read: 'json', key: 'gen_ai.completion' },
    ],
  },
};

// General OpenTelemetry attributes (https://opentelemetry.io/docs/specs/semconv/registry/attributes/), which
// OpenInference uses too for the session and the user.
const OTEL_GENERAL: ConventionTable = {
  source: 'otel-general',
  label: 'OTel general',
  follows: 'OpenTelemetry general semantic conventions (session, user, deployment)',
  fields: {
    session_id: [{ read: 'string', key: 'session.id' }],
    user_id: [
      { read: 'string', key: 'user.id' },
      { read: 'string', key: 'enduser.id' },
    ],
    environment: [
      { read: 'string', key: 'deployment.environment.name' },
      { read: 'string', key: 'deployment.environment' },
    ],
  },
};

// https://github.com/Arize-ai/openinference/blob/main/spec/semantic_conventions.md
const OPENINFERENCE: ConventionTable = {
  source: 'openinference',
  label: 'OpenInference',
  follows: 'OpenInference semantic conventions (@arizeai/openinference-semantic-conventions 2.x)',
  kind: [
    {
      key: 'openinference.span.kind',
      upperCase: true,
      kinds: { LLM: 'llm', EMBEDDING: 'llm', TOOL: 'tool', CHAIN: 'chain', RETRIEVER: 'retriever', RERANKER: 'retriever', AGENT: 'agent', GUARDRAIL: 'custom' },
    },
  ],
  fields: {
    model: [
      { read: 'string', key: 'llm.model_name' },
      { read: 'string', key: 'embedding.model_name' },
    ],
    input_tokens: [{ read: 'count', key: 'llm.token_count.prompt' }],
    output_tokens: [{ read: 'count', key: 'llm.token_count.completion' }],
    total_tokens: [{ read: 'count', key: 'llm.token_count.total' }],
    input: [
      { read: 'json', key: 'input.value', alsoTakes: 'input.mime_type' },
      { read: 'flattened', prefix: 'llm.input_messages.', strip: 'message.' },
    ],
    output: [
      { read: 'json', key: 'output.value', alsoTakes: 'output.mime_type' },
      { read: 'flattened', prefix: 'llm.output_messages.', strip: 'message.' },
      { read: 'flattened', prefix: 'retrieval.documents.', strip: 'document.' },
    ],
    session_id: [{ read: 'string', key: 'session.id' }],
    user_id: [{ read: 'string', key: 'user.id' }],
    agent_name: [{ read: 'string', key: 'agent.name' }],
  },
};

// OpenLLMetry's own attributes (https://github.com/traceloop/openllmetry-js, @traceloop/ai-semantic-conventions):
// its workflows, tasks, agents and tools, with association properties on every span below them.
const OPENLLMETRY: ConventionTable = {
  source: 'openllmetry',
  label: 'OpenLLMetry',
  follows: 'OpenLLMetry / Traceloop (@traceloop/node-server-sdk 0.27)',
  kind: [{ key: 'traceloop.span.kind', kinds: { workflow: 'chain', task: 'chain', agent: 'agent', tool: 'tool' } }],
  llmWhenPresent: ['llm.request.type'],
  fields: {
    total_tokens: [
      { read: 'count', key: 'llm.usage.total_tokens' },
      { read: 'count', key: 'gen_ai.usage.total_tokens' },
    ],
    input: [{ read: 'content', key: 'traceloop.entity.input' }],
    output: [{ read: 'content', key: 'traceloop.entity.output' }],
    session_id: [{ read: 'string', key: 'traceloop.association.properties.session_id' }],
    user_id: [{ read: 'string', key: 'traceloop.association.properties.user_id' }],
  },
};

// AI SDK 7 sends GenAI semconv through `@ai-sdk/otel`; what it adds of its own is the step span and, with
// `runtimeContext: true`, the runtime context a call includes (`includeRuntimeContext`).
const VERCEL_AI_7: ConventionTable = {
  source: 'vercel-ai-7',
  label: 'AI SDK 7',
  follows: 'Vercel AI SDK 7 (ai 7.0 with @ai-sdk/otel 1.0)',
  kind: [{ key: 'gen_ai.operation.name', kinds: { agent_step: 'chain' } }],
  fields: {
    session_id: [{ read: 'string', key: 'ai.settings.context.sessionId' }],
    user_id: [{ read: 'string', key: 'ai.settings.context.userId' }],
  },
};

// https://ai-sdk.dev/docs/ai-sdk-core/telemetry (AI SDK 6 and earlier): `ai.*` attributes, the kind in `ai.operationId`.
// The outer text and object calls are agents, as AI SDK 7 names the same span `invoke_agent`.
const VERCEL_AI_6: ConventionTable = {
  source: 'vercel-ai-6',
  label: 'AI SDK 6',
  follows: 'Vercel AI SDK 6 `experimental_telemetry` (ai 6.0; the keys of 4 and 5 where they differ)',
  kind: [
    {
      key: 'ai.operationId',
      kinds: {
        'ai.generateText': 'agent',
        'ai.streamText': 'agent',
        'ai.generateObject': 'agent',
        'ai.streamObject': 'agent',
        'ai.generateText.doGenerate': 'llm',
        'ai.streamText.doStream': 'llm',
        'ai.generateObject.doGenerate': 'llm',
        'ai.streamObject.doStream': 'llm',
        'ai.embed': 'chain',
        'ai.embedMany': 'chain',
        'ai.embed.doEmbed': 'llm',
        'ai.embedMany.doEmbed': 'llm',
        'ai.toolCall': 'tool',
      },
    },
  ],
  fields: {
    model: [
      { read: 'string', key: 'ai.response.model' },
      { read: 'string', key: 'ai.model.id' },
    ],
    input_tokens: [
      { read: 'count', key: 'ai.usage.inputTokens' },
      { read: 'count', key: 'ai.usage.promptTokens' },
    ],
    output_tokens: [
      { read: 'count', key: 'ai.usage.outputTokens' },
      { read: 'count', key: 'ai.usage.completionTokens' },
    ],
    total_tokens: [{ read: 'count', key: 'ai.usage.totalTokens' }],
    input: [
      { read: 'content', key: 'ai.prompt.messages' },
      { read: 'content', key: 'ai.prompt' },
      { read: 'content', key: 'ai.toolCall.args' },
    ],
    output: [
      { read: 'content', key: 'ai.response.text' },
      { read: 'content', key: 'ai.response.toolCalls' },
      { read: 'content', key: 'ai.response.object' },
      { read: 'content', key: 'ai.toolCall.result' },
    ],
    session_id: [{ read: 'string', key: 'ai.telemetry.metadata.sessionId' }],
    user_id: [{ read: 'string', key: 'ai.telemetry.metadata.userId' }],
  },
};

/**
 * The one precedence: for every field, a source earlier here wins over a later one, and within a source its table's
 * order. The OpenTelemetry spec comes first (current before older names), then the general attributes, then each
 * instrumentation's own. A span carries one source's keys in practice; where it carries two (AI SDK 6 sends
 * `gen_ai.usage.*` beside `ai.usage.*`), they agree, and the loser's attribute stays in `attributes`.
 */
export const CONVENTION_PRECEDENCE: readonly ConventionTable[] = [OTEL_GENAI, OTEL_GENAI_1_36, OTEL_GENERAL, OPENINFERENCE, OPENLLMETRY, VERCEL_AI_7, VERCEL_AI_6];

/** The fields in the order a span's are read; a field's index here is its slot in the key table. */
export const FIELDS: readonly ConventionField[] = ['model', 'input_tokens', 'output_tokens', 'total_tokens', 'input', 'output', 'session_id', 'user_id', 'agent_id', 'agent_name', 'environment'];

const readerIdentity = (reader: Reader): string => JSON.stringify(reader);

function buildFieldReaders(): Readonly<Record<ConventionField, readonly Reader[]>> {
  const readers = {} as Record<ConventionField, Reader[]>;
  for (const field of FIELDS) {
    const seen = new Set<string>();
    readers[field] = [];
    for (const table of CONVENTION_PRECEDENCE) {
      for (const reader of table.fields[field] ?? []) {
        // A key two sources share (`user.id`) is read once, at the place of the first.
        if (seen.has(readerIdentity(reader))) continue;
        seen.add(readerIdentity(reader));
        readers[field].push(reader);
      }
    }
  }
  return readers;
}

/** Every field's readers in precedence order, computed once. */
export const FIELD_READERS = buildFieldReaders();

/** An attribute naming the kind, with every source's values for it merged. */
export interface KindLookup {
  key: string;
  kinds: ReadonlyMap<string, SpanKind>;
  upperCase: boolean;
}

function buildKindLookups(): readonly KindLookup[] {
  const byKey = new Map<string, { kinds: Map<string, SpanKind>; upperCase: boolean }>();
  for (const table of CONVENTION_PRECEDENCE) {
    for (const rule of table.kind ?? []) {
      const lookup = byKey.get(rule.key) ?? { kinds: new Map<string, SpanKind>(), upperCase: rule.upperCase === true };
      for (const [value, kind] of Object.entries(rule.kinds)) if (!lookup.kinds.has(value)) lookup.kinds.set(value, kind);
      byKey.set(rule.key, lookup);
    }
  }
  return [...byKey].map(([key, { kinds, upperCase }]) => ({ key, kinds, upperCase }));
}

/** The attributes that name a kind, in precedence order; the first whose value is known decides. */
export const KIND_LOOKUPS = buildKindLookups();

/** Attributes whose mere presence (as a string) makes a span `llm` when no kind attribute decided. */
export const LLM_WHEN_PRESENT: readonly string[] = CONVENTION_PRECEDENCE.flatMap((table) => table.llmWhenPresent ?? []);

/** Beyond every reader's rank: the field has nothing to read on the span. */
export const NO_READER = 0x7fff;

/** Where a key or prefix leads: the field's index in {@link FIELDS} and the reader's index in its list. */
export interface ReaderSlot {
  field: number;
  rank: number;
}

/** A flattened prefix and the reader it leads to. */
export interface FlattenedSlot extends ReaderSlot {
  prefix: string;
}

/** The attribute keys each reader reads (its own and what it takes with it), and the event readers apart. */
function keysOf(reader: Reader): string[] {
  switch (reader.read) {
    case 'messages-with-instructions':
      return [reader.key, reader.instructions];
    case 'event-attribute':
    case 'flattened':
    case 'message-events':
      return [];
    default:
      return [reader.key];
  }
}

function buildKeyTable(): { keys: ReadonlyMap<string, ReaderSlot>; flattened: readonly FlattenedSlot[]; firstEventRank: readonly number[] } {
  const keys = new Map<string, ReaderSlot>();
  const flattened: FlattenedSlot[] = [];
  const firstEventRank = FIELDS.map(() => NO_READER);
  FIELDS.forEach((field, fieldIndex) => {
    FIELD_READERS[field].forEach((reader, rank) => {
      for (const key of keysOf(reader)) {
        const known = keys.get(key);
        if (known !== undefined && known.field !== fieldIndex) throw new Error(`the registry reads ${key} into two fields`);
        if (known === undefined) keys.set(key, { field: fieldIndex, rank });
      }
      if (reader.read === 'flattened') flattened.push({ prefix: reader.prefix, field: fieldIndex, rank });
      if ((reader.read === 'event-attribute' || reader.read === 'message-events') && firstEventRank[fieldIndex] === NO_READER) firstEventRank[fieldIndex] = rank;
    });
  });
  // A key is either in the table or under one flattened prefix: the lookup of a span's key stops at the first match.
  for (const a of flattened) {
    for (const b of flattened) if (a !== b && a.prefix.startsWith(b.prefix)) throw new Error(`flattened prefix ${b.prefix} hides ${a.prefix}`);
    for (const key of keys.keys()) if (key.startsWith(a.prefix)) throw new Error(`${key} is under the flattened prefix ${a.prefix}`);
  }
  return { keys, flattened, firstEventRank };
}

/**
 * The precomputed key table: a span's attributes are looked up in it once each, which tells, for every field, the
 * first reader that can find anything (so a field without any of its keys costs no lookup at all, however many
 * sources the registry knows). `flattened` prefixes are matched only for keys not in the table; event readers are
 * asked only when the span has events.
 */
export const KEY_TABLE = buildKeyTable();

/** First characters of the flattened prefixes: a key starting otherwise is not compared with them. */
export const FLATTENED_FIRST_CHARS: ReadonlySet<number> = new Set(KEY_TABLE.flattened.map((slot) => slot.prefix.charCodeAt(0)));

/** Every `flattened` prefix. */
export const FLATTENED_PREFIXES: readonly string[] = KEY_TABLE.flattened.map((slot) => slot.prefix);
