import type { JsonObject, JsonValue } from '../../shared/domain/json.js';
import type { SpanKind } from '../../shared/domain/trace.js';
import { DecodedJson, type DecodedJsonText, JsonOrText } from '../core/draft.js';
import type { OtlpEvent } from './otlp-model.js';

/**
 * The GenAI semantic conventions (current and older names), OpenLLMetry and OpenInference read into
 * our span fields. Every attribute a field is taken from is marked taken, so what is left is exactly
 * what no field holds. (Marking instead of `delete` keeps the objects out of V8's slow dictionary mode.)
 */

/** An attribute bag being read: the attributes and the keys already taken into fields. */
export interface AttributeBag {
  attributes: JsonObject;
  taken: Set<string>;
}

// Most keys asked for are absent: the own-property test comes first, the taken-set lookup only for those present.
const has = (bag: AttributeBag, key: string) => Object.hasOwn(bag.attributes, key) && !bag.taken.has(key);

const OPERATION_KIND: Record<string, SpanKind> = {
  chat: 'llm',
  text_completion: 'llm',
  generate_content: 'llm',
  embeddings: 'llm',
  execute_tool: 'tool',
  invoke_agent: 'agent',
  create_agent: 'agent',
};

const OPENINFERENCE_KIND: Record<string, SpanKind> = {
  LLM: 'llm',
  EMBEDDING: 'llm',
  TOOL: 'tool',
  CHAIN: 'chain',
  RETRIEVER: 'retriever',
  RERANKER: 'retriever',
  AGENT: 'agent',
  GUARDRAIL: 'custom',
};

const TRACELOOP_KIND: Record<string, SpanKind> = { workflow: 'chain', task: 'chain', agent: 'agent', tool: 'tool' };

/** Takes an attribute out of the bag, returning it. */
function take(bag: AttributeBag, key: string): JsonValue | undefined {
  if (!has(bag, key)) return undefined;
  bag.taken.add(key);
  return bag.attributes[key];
}

/** The first of `keys` holding a non-empty string; only that one is taken out. */
function takeString(bag: AttributeBag, ...keys: string[]): string {
  for (const key of keys) {
    const value = has(bag, key) ? bag.attributes[key] : undefined;
    if (typeof value === 'string' && value !== '') {
      bag.taken.add(key);
      return value;
    }
  }
  return '';
}

/** The first of `keys` holding a count (a non-negative safe integer, or such a decimal string). */
function takeCount(bag: AttributeBag, ...keys: string[]): number | undefined {
  for (const key of keys) {
    const value = has(bag, key) ? bag.attributes[key] : undefined;
    const count = typeof value === 'string' && /^\d{1,15}$/.test(value) ? Number(value) : value;
    if (typeof count === 'number' && Number.isSafeInteger(count) && count >= 0) {
      bag.taken.add(key);
      return count;
    }
  }
  return undefined;
}

function kindOf(attributes: JsonObject): SpanKind {
  const operation = attributes['gen_ai.operation.name'];
  if (typeof operation === 'string' && OPERATION_KIND[operation]) return OPERATION_KIND[operation];
  const openInference = attributes['openinference.span.kind'];
  if (typeof openInference === 'string' && OPENINFERENCE_KIND[openInference.toUpperCase()]) {
    return OPENINFERENCE_KIND[openInference.toUpperCase()] as SpanKind;
  }
  const traceloop = attributes['traceloop.span.kind'];
  if (typeof traceloop === 'string' && TRACELOOP_KIND[traceloop]) return TRACELOOP_KIND[traceloop];
  if (typeof attributes['llm.request.type'] === 'string' || typeof attributes['gen_ai.system'] === 'string') return 'llm';
  return 'custom';
}

/**
 * A value for a member stored as JSON text: a string as sent (JSON text when it is, plain text otherwise: validation
 * tells them apart, parsing it once), any other value decoded.
 */
export function jsonTextOf(value: JsonValue): DecodedJsonText {
  return typeof value === 'string' ? new JsonOrText(value) : new DecodedJson(value);
}

/**
 * Flattened message lists (`gen_ai.prompt.0.role`, `llm.input_messages.0.message.content`) taken
 * out of the bag and rebuilt as an array of objects.
 */
function takeFlattened(bag: AttributeBag, prefix: string, strip = ''): JsonObject[] | undefined {
  const messages: JsonObject[] = [];
  for (const key of Object.keys(bag.attributes)) {
    if (!key.startsWith(prefix) || bag.taken.has(key)) continue;
    const rest = key.slice(prefix.length);
    const dot = rest.indexOf('.');
    const index = Number(rest.slice(0, dot));
    if (dot <= 0 || !Number.isInteger(index) || index < 0 || index > 10_000) continue;
    let field = rest.slice(dot + 1);
    if (strip !== '' && field.startsWith(strip)) field = field.slice(strip.length);
    (messages[index] ??= {})[field] = bag.attributes[key] as JsonValue;
    bag.taken.add(key);
  }
  return messages.length > 0 ? messages.filter((m): m is JsonObject => m !== undefined) : undefined;
}

const INPUT_EVENTS = new Set(['gen_ai.system.message', 'gen_ai.user.message', 'gen_ai.assistant.message', 'gen_ai.tool.message']);
const OUTPUT_EVENTS = new Set(['gen_ai.choice']);
const DETAILS_EVENT = 'gen_ai.client.inference.operation.details';

/** The older per-message events (`gen_ai.user.message`, `gen_ai.choice`) as a message list. */
function eventMessages(events: readonly OtlpEvent[], names: ReadonlySet<string>, used: Set<OtlpEvent>): JsonObject[] | undefined {
  const messages: JsonObject[] = [];
  for (const event of events) {
    if (!names.has(event.name)) continue;
    used.add(event);
    const role = event.name.startsWith('gen_ai.') && event.name.endsWith('.message') ? event.name.slice(7, -8) : undefined;
    messages.push(role !== undefined && !('role' in event.attributes) ? { role, ...event.attributes } : { ...event.attributes });
  }
  return messages.length > 0 ? messages : undefined;
}

function takeMessages(bag: AttributeBag, events: readonly OtlpEvent[], used: Set<OtlpEvent>, side: 'input' | 'output'): DecodedJsonText {
  const current = take(bag, `gen_ai.${side}.messages`);
  if (current !== undefined) return jsonTextOf(current);
  const details = events.find((event) => event.name === DETAILS_EVENT && `gen_ai.${side}.messages` in event.attributes);
  if (details) {
    used.add(details);
    return jsonTextOf(details.attributes[`gen_ai.${side}.messages`] as JsonValue);
  }
  const older = side === 'input' ? 'gen_ai.prompt' : 'gen_ai.completion';
  const flattened = takeFlattened(bag, `${older}.`);
  if (flattened) return new DecodedJson(flattened);
  const fromEvents = eventMessages(events, side === 'input' ? INPUT_EVENTS : OUTPUT_EVENTS, used);
  if (fromEvents) return new DecodedJson(fromEvents);
  const single = take(bag, older);
  if (single !== undefined) return jsonTextOf(single);
  const openInference = take(bag, `${side}.value`);
  if (openInference !== undefined) {
    take(bag, `${side}.mime_type`);
    return jsonTextOf(openInference);
  }
  const oiMessages = takeFlattened(bag, side === 'input' ? 'llm.input_messages.' : 'llm.output_messages.', 'message.');
  return oiMessages ? new DecodedJson(oiMessages) : '';
}

/** The fields of one span read from its attributes and events. */
export interface GenAiFields {
  kind: SpanKind;
  model: string;
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  /** True when the span said anything about tokens (a trace total sums only such spans). */
  hasTokens: boolean;
  input: DecodedJsonText;
  output: DecodedJsonText;
  session_id: string;
  user_id: string;
  agent_id: string;
  agent_name: string;
  environment: string;
  /** The message of the first `exception` event, `type: message`. */
  exceptionMessage: string | null;
  /** Events no field took, kept under `otel.events` in the attributes. */
  otherEvents: OtlpEvent[];
}

/** Reads the mapped fields out of the bag, marking every attribute it takes. */
export function takeGenAiFields(bag: AttributeBag, events: readonly OtlpEvent[]): GenAiFields {
  const kind = kindOf(bag.attributes);
  const used = new Set<OtlpEvent>();
  const inputTokens = takeCount(bag, 'gen_ai.usage.input_tokens', 'gen_ai.usage.prompt_tokens', 'llm.token_count.prompt');
  const outputTokens = takeCount(bag, 'gen_ai.usage.output_tokens', 'gen_ai.usage.completion_tokens', 'llm.token_count.completion');
  const totalTokens = takeCount(bag, 'llm.token_count.total', 'llm.usage.total_tokens', 'gen_ai.usage.total_tokens');
  const exception = events.find((event) => event.name === 'exception');
  let exceptionMessage: string | null = null;
  if (exception) {
    const type = exception.attributes['exception.type'];
    const message = exception.attributes['exception.message'];
    const text = [type, message].filter((part): part is string => typeof part === 'string' && part !== '').join(': ');
    exceptionMessage = text === '' ? null : text;
  }
  const fields: GenAiFields = {
    kind,
    model: takeString(bag, 'gen_ai.response.model', 'gen_ai.request.model', 'llm.model_name'),
    input_tokens: inputTokens ?? 0,
    output_tokens: outputTokens ?? 0,
    total_tokens: totalTokens ?? (inputTokens ?? 0) + (outputTokens ?? 0),
    hasTokens: inputTokens !== undefined || outputTokens !== undefined || totalTokens !== undefined,
    input: takeMessages(bag, events, used, 'input'),
    output: takeMessages(bag, events, used, 'output'),
    session_id: takeString(bag, 'gen_ai.conversation.id', 'session.id'),
    user_id: takeString(bag, 'user.id', 'enduser.id'),
    agent_id: takeString(bag, 'gen_ai.agent.id'),
    agent_name: takeString(bag, 'gen_ai.agent.name'),
    environment: takeString(bag, 'deployment.environment.name', 'deployment.environment'),
    exceptionMessage,
    otherEvents: events.filter((event) => !used.has(event)),
  };
  return fields;
}
