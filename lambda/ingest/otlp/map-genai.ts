import type { JsonObject, JsonValue } from '../../shared/domain/json.js';
import type { SpanKind } from '../../shared/domain/trace.js';
import { DecodedJson, type DecodedJsonText, JsonOrText } from '../core/draft.js';
import * as registry from './conventions.js';
import type { ConventionField, Reader } from './conventions.js';
import type { OtlpEvent } from './otlp-model.js';

// The registry's tables held in this module's own constants: read per span, and a transpiler's live binding of an
// import (tsx, jest) is a getter call at every use.
const FIELD_READERS = registry.FIELD_READERS;
const FIELDS = registry.FIELDS;
const FLATTENED_FIRST_CHARS = registry.FLATTENED_FIRST_CHARS;
const TABLE_KEYS = registry.KEY_TABLE.keys;
const TABLE_FLATTENED = registry.KEY_TABLE.flattened;
const FIRST_EVENT_RANK = registry.KEY_TABLE.firstEventRank;
const KIND_LOOKUPS = registry.KIND_LOOKUPS;
const LLM_WHEN_PRESENT = registry.LLM_WHEN_PRESENT;
const NO_READER = registry.NO_READER;

/**
 * Our span fields read out of a span's attributes and events, by the readers of the registry of conventions
 * (`conventions.ts`). Every attribute a field is taken from is marked taken, so what is left is exactly what no field
 * holds. (Marking instead of `delete` keeps the objects out of V8's slow dictionary mode.)
 */

/** An attribute bag being read: the attributes and the keys already taken into fields. */
export interface AttributeBag {
  attributes: JsonObject;
  taken: Set<string>;
}

// Most keys asked for are absent: the own-property test comes first, the taken-set lookup only for those present.
const has = (bag: AttributeBag, key: string) => Object.hasOwn(bag.attributes, key) && !bag.taken.has(key);

/** Takes an attribute out of the bag, returning it. */
function take(bag: AttributeBag, key: string): JsonValue | undefined {
  if (!has(bag, key)) return undefined;
  bag.taken.add(key);
  return bag.attributes[key];
}

/** The value of a non-empty string attribute, taken; `undefined` when it is not one. */
function takeString(bag: AttributeBag, key: string): string | undefined {
  const value = has(bag, key) ? bag.attributes[key] : undefined;
  if (typeof value !== 'string' || value === '') return undefined;
  bag.taken.add(key);
  return value;
}

const DECIMAL_COUNT = /^\d{1,15}$/;

/** A count (a non-negative safe integer, or such a decimal string), taken; `undefined` when it is not one. */
function takeCount(bag: AttributeBag, key: string): number | undefined {
  const value = has(bag, key) ? bag.attributes[key] : undefined;
  const count = typeof value === 'string' && DECIMAL_COUNT.test(value) ? Number(value) : value;
  if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 0) return undefined;
  bag.taken.add(key);
  return count;
}

function kindOf(attributes: JsonObject): SpanKind {
  for (const lookup of KIND_LOOKUPS) {
    const value = attributes[lookup.key];
    if (typeof value !== 'string') continue;
    const kind = lookup.kinds.get(lookup.upperCase ? value.toUpperCase() : value);
    if (kind !== undefined) return kind;
  }
  for (const key of LLM_WHEN_PRESENT) if (typeof attributes[key] === 'string') return 'llm';
  return 'custom';
}

/**
 * A value for a member stored as JSON text: a string as sent (JSON text when it is, plain text otherwise: validation
 * tells them apart, parsing it once), any other value decoded.
 */
export function jsonTextOf(value: JsonValue): DecodedJsonText {
  return typeof value === 'string' ? new JsonOrText(value) : new DecodedJson(value);
}

/** What reading one span needs beside its bag: its events, those a field used, and where each field starts. */
interface SpanReading {
  bag: AttributeBag;
  events: readonly OtlpEvent[];
  usedEvents: Set<OtlpEvent>;
  /** Per field (by its index in FIELDS), the rank of its first reader that may find something; NO_READER for none. */
  firstRank: Int16Array;
  /** The keys under each flattened prefix present. */
  flattened: Map<string, string[]> | undefined;
}

const FIELD_SLOT = Object.fromEntries(FIELDS.map((field, index) => [field, index])) as Record<ConventionField, number>;

// One span is read at a time, to the end, so its first ranks live in one array reused for every span.
const FIRST_RANK = new Int16Array(FIELDS.length);

/** One pass over the span's keys through the key table: no per-field lookups of keys the span does not have. */
function startReading(bag: AttributeBag, events: readonly OtlpEvent[]): SpanReading {
  const firstRank = FIRST_RANK;
  if (events.length > 0) firstRank.set(FIRST_EVENT_RANK);
  else firstRank.fill(NO_READER);
  let flattened: Map<string, string[]> | undefined;
  for (const key in bag.attributes) {
    const slot = TABLE_KEYS.get(key);
    if (slot !== undefined) {
      if (slot.rank < (firstRank[slot.field] as number)) firstRank[slot.field] = slot.rank;
      continue;
    }
    if (!FLATTENED_FIRST_CHARS.has(key.charCodeAt(0))) continue;
    for (const candidate of TABLE_FLATTENED) {
      if (!key.startsWith(candidate.prefix)) continue;
      if (candidate.rank < (firstRank[candidate.field] as number)) firstRank[candidate.field] = candidate.rank;
      flattened ??= new Map();
      const keys = flattened.get(candidate.prefix);
      if (keys) keys.push(key);
      else flattened.set(candidate.prefix, [key]);
      break;
    }
  }
  return { bag, events, usedEvents: new Set(), firstRank, flattened };
}

/**
 * Flattened message lists (`gen_ai.prompt.0.role`, `llm.input_messages.0.message.content`) taken
 * out of the bag and rebuilt as an array of objects.
 */
function takeFlattened(reading: SpanReading, prefix: string, strip = ''): JsonObject[] | undefined {
  const { bag } = reading;
  const messages: JsonObject[] = [];
  for (const key of reading.flattened?.get(prefix) ?? []) {
    if (bag.taken.has(key)) continue;
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

/** The older per-message events (`gen_ai.user.message`, `gen_ai.choice`) as a message list. */
function eventMessages(reading: SpanReading, names: readonly string[]): JsonObject[] | undefined {
  const messages: JsonObject[] = [];
  for (const event of reading.events) {
    if (!names.includes(event.name)) continue;
    reading.usedEvents.add(event);
    const role = event.name.startsWith('gen_ai.') && event.name.endsWith('.message') ? event.name.slice(7, -8) : undefined;
    messages.push(role !== undefined && !('role' in event.attributes) ? { role, ...event.attributes } : { ...event.attributes });
  }
  return messages.length > 0 ? messages : undefined;
}

/** A JSON array, from the value or from the JSON text it holds; `undefined` for anything else. */
function arrayOf(value: JsonValue): JsonValue[] | undefined {
  if (Array.isArray(value)) return value;
  if (typeof value !== 'string' || !value.startsWith('[')) return undefined;
  try {
    const parsed: unknown = JSON.parse(value);
    return Array.isArray(parsed) ? (parsed as JsonValue[]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The GenAI messages with the system instructions in front, as one `system` message. Only when both are arrays
 * (or JSON text of one) are the instructions taken; otherwise they stay in `attributes` and the messages are read
 * as sent. Parsed here once and handed over as a value, so validation does not parse the text again.
 */
function takeMessagesWithInstructions(bag: AttributeBag, key: string, instructionsKey: string): DecodedJsonText | undefined {
  const instructions = has(bag, instructionsKey) ? arrayOf(bag.attributes[instructionsKey] as JsonValue) : undefined;
  if (instructions === undefined) {
    const messages = take(bag, key);
    return messages === undefined ? undefined : jsonTextOf(messages);
  }
  const sent = has(bag, key) ? (bag.attributes[key] as JsonValue) : undefined;
  const messages = sent === undefined ? [] : arrayOf(sent);
  if (messages === undefined) return sent === undefined ? undefined : jsonTextOf(take(bag, key) as JsonValue);
  bag.taken.add(instructionsKey);
  if (sent !== undefined) bag.taken.add(key);
  return new DecodedJson([{ role: 'system', parts: instructions }, ...messages]);
}

/** A JSON-text field by the first of its readers that finds a value; `''` when none does. */
function readContent(reading: SpanReading, field: 'input' | 'output'): DecodedJsonText {
  const { bag } = reading;
  const readers = FIELD_READERS[field];
  const from = reading.firstRank[FIELD_SLOT[field]] as number;
  for (let rank = from; rank < readers.length; rank++) {
    const reader = readers[rank] as Reader;
    switch (reader.read) {
      case 'json': {
        const value = take(bag, reader.key);
        if (value === undefined) break;
        if (reader.alsoTakes !== undefined) take(bag, reader.alsoTakes);
        return jsonTextOf(value);
      }
      case 'content': {
        const value = has(bag, reader.key) ? bag.attributes[reader.key] : undefined;
        if (value === undefined || value === '') break;
        bag.taken.add(reader.key);
        return jsonTextOf(value as JsonValue);
      }
      case 'messages-with-instructions': {
        const value = takeMessagesWithInstructions(bag, reader.key, reader.instructions);
        if (value !== undefined) return value;
        break;
      }
      case 'event-attribute': {
        const event = reading.events.find((candidate) => candidate.name === reader.event && reader.key in candidate.attributes);
        if (!event) break;
        reading.usedEvents.add(event);
        return jsonTextOf(event.attributes[reader.key] as JsonValue);
      }
      case 'flattened': {
        const messages = takeFlattened(reading, reader.prefix, reader.strip);
        if (messages) return new DecodedJson(messages);
        break;
      }
      case 'message-events': {
        const messages = eventMessages(reading, reader.events);
        if (messages) return new DecodedJson(messages);
        break;
      }
      default:
        break;
    }
  }
  return '';
}

/** A string field by the first of its readers holding a non-empty string; `''` when none does. */
function readString(bag: AttributeBag, readers: readonly Reader[], from = 0): string {
  for (let rank = from; rank < readers.length; rank++) {
    const reader = readers[rank] as Reader;
    if (reader.read !== 'string') continue;
    const value = takeString(bag, reader.key);
    if (value !== undefined) return value;
  }
  return '';
}

/** A string field of the span, by the first of its readers that may find one. */
function readField(reading: SpanReading, field: ConventionField): string {
  return readString(reading.bag, FIELD_READERS[field], reading.firstRank[FIELD_SLOT[field]] as number);
}

function readCount(reading: SpanReading, field: 'input_tokens' | 'output_tokens' | 'total_tokens'): number | undefined {
  const { bag } = reading;
  const readers = FIELD_READERS[field];
  for (let rank = reading.firstRank[FIELD_SLOT[field]] as number; rank < readers.length; rank++) {
    const reader = readers[rank] as Reader;
    if (reader.read !== 'count') continue;
    const value = takeCount(bag, reader.key);
    if (value !== undefined) return value;
  }
  return undefined;
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

/** The deployment environment of a resource, taken out of its bag; nothing else is read from a resource. */
export function takeEnvironment(bag: AttributeBag): string {
  return readString(bag, FIELD_READERS.environment);
}

/** Reads the mapped fields out of the bag, marking every attribute it takes. */
export function takeGenAiFields(bag: AttributeBag, events: readonly OtlpEvent[]): GenAiFields {
  const kind = kindOf(bag.attributes);
  const reading = startReading(bag, events);
  const inputTokens = readCount(reading, 'input_tokens');
  const outputTokens = readCount(reading, 'output_tokens');
  const totalTokens = readCount(reading, 'total_tokens');
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
    model: readField(reading, 'model'),
    input_tokens: inputTokens ?? 0,
    output_tokens: outputTokens ?? 0,
    total_tokens: totalTokens ?? (inputTokens ?? 0) + (outputTokens ?? 0),
    hasTokens: inputTokens !== undefined || outputTokens !== undefined || totalTokens !== undefined,
    input: readContent(reading, 'input'),
    output: readContent(reading, 'output'),
    session_id: readField(reading, 'session_id'),
    user_id: readField(reading, 'user_id'),
    agent_id: readField(reading, 'agent_id'),
    agent_name: readField(reading, 'agent_name'),
    environment: readField(reading, 'environment'),
    exceptionMessage,
    otherEvents: reading.usedEvents.size === 0 ? [...events] : events.filter((event) => !reading.usedEvents.has(event)),
  };
  return fields;
}
