import { type JsonObject, type JsonValue, setMember } from '../../shared/domain/json.js';
import { MalformedBodyError } from '../core/errors.js';
import { DecodedJson, DecodedTime, type SpanDraft, type TraceDraft, type TraceMembersDraft } from '../core/draft.js';
import { formatMicros, withinDayOfClock } from '../core/validation/timestamps.js';
import { spanUuid, traceUuid } from '../../shared/domain/trace-ids.js';
import { takeEnvironment, takeGenAiFields, type GenAiFields } from './map-genai.js';
import type { OtlpExport, OtlpSpan } from './otlp-model.js';

const ZERO_TRACE_ID = '00000000000000000000000000000000';
const ZERO_SPAN_ID = '0000000000000000';

/** True for `digits` lower-case hex digits, not all zeros (a regular expression costs several times more). */
function isHexId(id: string, digits: number, zero: string): boolean {
  if (id.length !== digits || id === zero) return false;
  for (let i = 0; i < digits; i++) {
    const c = id.charCodeAt(i);
    if (!((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66))) return false;
  }
  return true;
}

const isTraceId = (id: string): boolean => isHexId(id, 32, ZERO_TRACE_ID);
const isSpanId = (id: string): boolean => isHexId(id, 16, ZERO_SPAN_ID);
const SPAN_KIND_NAMES = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'];

/** One span of an export, mapped to a SpanIngest object, with what its trace needs from it. */
export interface MappedSpan {
  traceHex: string;
  spanHex: string;
  /** The SpanIngest object the span becomes, its times and JSON texts as values. */
  input: SpanDraft;
  isRoot: boolean;
  startMicros: number;
  endMicros: number;
  fields: GenAiFields;
  /** Resource attributes left after the mapping, for the trace's own attributes. */
  resource: JsonObject;
}

/** A span the mapping could not use: its ids, as hex, and why. */
export interface RejectedSpan {
  traceId: string;
  spanId: string;
  reason: string;
}

/** A decoded time; before the epoch is clamped to 0 (the validation rejects it). */
const sinceEpoch = (micros: number): number => (micros > 0 ? micros : 0);

function eventJson(fields: GenAiFields): JsonValue[] {
  return fields.otherEvents.map((event) => ({ name: event.name, time: formatMicros(sinceEpoch(event.timeUnixMicros)), attributes: event.attributes }));
}

/** A resource's attributes with the fields read out of them, done once per resource. */
interface MappedResource {
  attributes: JsonObject;
  environment: string;
}

function mapResource(attributes: JsonObject): MappedResource {
  const bag = { attributes, taken: new Set<string>() };
  // Only the environment: a resource's other attributes (`user.id` set once for a process) stay in every span's attributes.
  const environment = takeEnvironment(bag);
  return { environment, attributes: untaken(bag.attributes, bag.taken, {}) };
}

const NOTHING_TAKEN: ReadonlySet<string> = new Set();

/** Copies the attributes no field took into `target`. */
function untaken(attributes: JsonObject, taken: ReadonlySet<string>, target: JsonObject): JsonObject {
  for (const key in attributes) if (!taken.has(key)) setMember(target, key, attributes[key] as JsonValue);
  return target;
}

/** Why the span's ids cannot be used, if they cannot; `parentHex` is its parent id, `''` for a root. */
function idProblem(span: OtlpSpan, parentHex: string): string | undefined {
  if (!isTraceId(span.traceId)) return 'trace_id is not 16 bytes (32 hex digits) other than all zeros';
  if (!isSpanId(span.spanId)) return 'span_id is not 8 bytes (16 hex digits) other than all zeros';
  if (parentHex !== '' && !isSpanId(parentHex)) return 'parent_span_id is neither empty nor 8 bytes (16 hex digits)';
  if (parentHex === span.spanId) return 'parent_span_id equals span_id';
  return span.problem;
}

const isTagList = (value: JsonValue | undefined): value is string[] =>
  Array.isArray(value) && value.every((tag) => typeof tag === 'string' && tag.isWellFormed());

/**
 * `tags` means a list of well-formed strings in our attributes (the landing stores it as a list column):
 * any other value keeps its OTel name apart, under `otel.attribute.tags`; OpenInference's `tag.tags` list
 * becomes `tags` when there is none. So one odd resource attribute does not make validation reject every trace.
 */
function settleTags(attributes: JsonObject): void {
  const tags = attributes.tags;
  if (tags !== undefined && !isTagList(tags)) {
    attributes['otel.attribute.tags'] = tags;
    delete attributes.tags;
  }
  const openInferenceTags = attributes['tag.tags'];
  if (attributes.tags === undefined && isTagList(openInferenceTags)) {
    attributes.tags = openInferenceTags;
    delete attributes['tag.tags'];
  }
}

/** What is left of the resource's and the span's attributes after the fields took theirs, with the OTel identity added. */
function spanAttributes(span: OtlpSpan, resource: MappedResource, bag: { taken: ReadonlySet<string> }, parentHex: string, scope: { name: string; version: string }, fields: GenAiFields): JsonObject {
  // Span attributes win over resource attributes of the same name; a name a field took is left out of both.
  // Built up from `{}`: a copy made by spread (`{ ...resource.attributes }`) then grown gets a new hidden class
  // per span in V8, which made building and serializing the attributes ~7× slower (bench/otlp.ts).
  const attributes = untaken(span.attributes, bag.taken, untaken(resource.attributes, bag.taken, {}));
  settleTags(attributes);
  attributes['otel.trace_id'] = span.traceId;
  attributes['otel.span_id'] = span.spanId;
  if (parentHex !== '') attributes['otel.parent_span_id'] = parentHex;
  attributes['otel.span_kind'] = SPAN_KIND_NAMES[span.kind] ?? String(span.kind);
  if (scope.name !== '') attributes['otel.scope.name'] = scope.name;
  if (scope.version !== '') attributes['otel.scope.version'] = scope.version;
  if (span.traceState !== '') attributes['otel.trace_state'] = span.traceState;
  if (fields.otherEvents.length > 0) attributes['otel.events'] = eventJson(fields);
  return attributes;
}

function mapSpan(span: OtlpSpan, resource: MappedResource, scopeName: string, scopeVersion: string): MappedSpan | RejectedSpan {
  const parentHex = span.parentSpanId === ZERO_SPAN_ID ? '' : span.parentSpanId;
  const problem = idProblem(span, parentHex);
  if (problem !== undefined) return { traceId: span.traceId.slice(0, 64), spanId: span.spanId.slice(0, 64), reason: problem };

  const bag = { attributes: span.attributes, taken: new Set<string>() };
  const fields = takeGenAiFields(bag, span.events);
  fields.environment ||= resource.environment;
  const attributes = spanAttributes(span, resource, bag, parentHex, { name: scopeName, version: scopeVersion }, fields);
  const startMicros = sinceEpoch(span.startTimeUnixMicros);
  const endMicros = Math.max(startMicros, sinceEpoch(span.endTimeUnixMicros));
  const isError = span.statusCode === 2;
  const input: SpanDraft = {
    span_id: spanUuid(span.traceId, span.spanId),
    parent_span_id: parentHex === '' ? null : spanUuid(span.traceId, parentHex),
    timestamp: new DecodedTime(startMicros),
    duration_ms: (endMicros - startMicros) / 1000,
    name: span.name,
    kind: fields.kind,
    status: isError ? 'error' : 'ok',
    model: fields.model,
    input_tokens: fields.input_tokens,
    output_tokens: fields.output_tokens,
    total_tokens: fields.total_tokens,
    input: fields.input,
    output: fields.output,
    attributes: new DecodedJson(attributes),
    error_message: isError ? span.statusMessage || fields.exceptionMessage : null,
    session_id: fields.session_id,
    agent_id: fields.agent_id,
    agent_name: fields.agent_name,
    user_id: fields.user_id,
  };
  return { traceHex: span.traceId, spanHex: span.spanId, input, isRoot: parentHex === '', startMicros, endMicros, fields, resource: resource.attributes };
}

/** The spans of one trace in one export. */
export interface SpanGroup {
  traceHex: string;
  spans: MappedSpan[];
}

export interface GroupedExport {
  groups: SpanGroup[];
  /** As decoded: no string of the export can hold a lone surrogate. */
  wellFormedText: boolean;
  rejected: RejectedSpan[];
  /** Spans in the export, rejected ones included. */
  spanCount: number;
}

/** Maps every span and groups them by trace id, in the order the trace ids first appear. */
export function groupSpans(decoded: OtlpExport): GroupedExport {
  const groups = new Map<string, SpanGroup>();
  // Span ids seen per trace: a lookup per span, so a trace of many spans groups in linear time.
  const seen = new Map<string, Set<string>>();
  const rejected: RejectedSpan[] = [];
  let spanCount = 0;
  for (const resourceSpans of decoded.resourceSpans) {
    const resource = mapResource(resourceSpans.resourceAttributes);
    for (const scopeSpans of resourceSpans.scopeSpans) {
      for (const span of scopeSpans.spans) {
        spanCount++;
        const mapped = mapSpan(span, resource, scopeSpans.scopeName, scopeSpans.scopeVersion);
        if (!('input' in mapped)) {
          rejected.push(mapped);
          continue;
        }
        const group = groups.get(mapped.traceHex);
        const spanIds = seen.get(mapped.traceHex);
        if (!group || !spanIds) {
          groups.set(mapped.traceHex, { traceHex: mapped.traceHex, spans: [mapped] });
          seen.set(mapped.traceHex, new Set([mapped.spanHex]));
        } else if (spanIds.has(mapped.spanHex)) {
          rejected.push({ traceId: mapped.traceHex, spanId: mapped.spanHex, reason: 'span_id appears twice in the trace within this export' });
        } else {
          spanIds.add(mapped.spanHex);
          group.spans.push(mapped);
        }
      }
    }
  }
  return { groups: [...groups.values()], rejected, spanCount, wellFormedText: decoded.wellFormedText };
}

/** A trace built from one group: the draft the core validates, and the spans it was built from. */
export interface BuiltTrace {
  traceHex: string;
  /** The TraceIngest object, its spans in the group's order; `spansOnly` when the export holds no root span of the trace. */
  draft: TraceDraft;
  spans: MappedSpan[];
}

/**
 * The TraceIngest object of one group. The trace's own fields come from its root span (earliest,
 * should an export hold several); tokens are the root's when it reports any, else the sum over the
 * group's spans. Without a root span the object carries the spans only (`spansOnly`): timestamp and
 * duration then span the group, so the record still validates and partitions by date.
 */
export function buildTrace(group: SpanGroup, workspaceSlug: string | undefined, wellFormedText = false, nowMicros?: number): BuiltTrace {
  const spans = group.spans;
  const root = spans.filter((span) => span.isRoot).sort((a, b) => a.startMicros - b.startMicros)[0];
  // Without a root the trace's time spans its spans: those validation will keep, so that one span with an
  // absurd start (which validation leaves out) does not take the trace's timestamp, and its other spans, with it.
  const inRange = nowMicros === undefined ? spans : spans.filter((span) => withinDayOfClock(span.startMicros, nowMicros));
  const extent = inRange.length > 0 ? inRange : spans;
  const first = root ?? extent.reduce((a, b) => (b.startMicros < a.startMicros ? b : a));
  const start = root ? root.startMicros : first.startMicros;
  // A loop, not Math.max(...spans): a spread of ~130k arguments overflows the stack, and one export can hold that many.
  const end = root ? root.endMicros : extent.reduce((latest, span) => Math.max(latest, span.endMicros), first.endMicros);
  const pick = (field: 'session_id' | 'user_id' | 'agent_id' | 'agent_name' | 'environment' | 'model') =>
    (root?.fields[field] || spans.find((span) => span.fields[field] !== '')?.fields[field]) ?? '';
  const counted = root?.fields.hasTokens ? [root] : spans;
  const sum = (field: 'input_tokens' | 'output_tokens' | 'total_tokens') => counted.reduce((total, span) => total + span.fields[field], 0);
  const attributes = untaken(first.resource, NOTHING_TAKEN, {}); // not a spread: see spanAttributes
  attributes['otel.trace_id'] = group.traceHex;
  settleTags(attributes);
  const input: TraceMembersDraft = {
    trace_id: traceUuid(group.traceHex),
    timestamp: new DecodedTime(start),
    environment: pick('environment') || 'default',
    duration_ms: (end - start) / 1000,
    root_span_name: root ? root.input.name : '',
    status: root ? root.input.status : 'ok',
    model: pick('model'),
    input_tokens: sum('input_tokens'),
    output_tokens: sum('output_tokens'),
    total_tokens: sum('total_tokens'),
    attributes: new DecodedJson(attributes),
    session_id: pick('session_id'),
    agent_id: pick('agent_id'),
    agent_name: pick('agent_name'),
    user_id: pick('user_id'),
    spans: spans.map((span) => span.input),
  };
  if (workspaceSlug !== undefined) input.workspace_slug = workspaceSlug;
  const draft: TraceDraft = { trace: input, spansOnly: root === undefined, invalidSpan: 'drops-span', wellFormedText };
  return { traceHex: group.traceHex, draft, spans };
}


/** Distinct trace ids one export may hold: twice the 512 spans a BatchSpanProcessor sends at most. */
export const MAX_TRACES_PER_EXPORT = 1_000;

/** An export as drafts for the ingest core: one per trace id, with the spans the mapping could not use. */
export interface DraftedExport {
  traces: BuiltTrace[];
  rejected: RejectedSpan[];
  /** Spans in the export, rejected ones included. */
  spanCount: number;
}

/**
 * The mapping step of the OTLP route: every span mapped and grouped by trace id, then one draft per trace. More
 * than {@link MAX_TRACES_PER_EXPORT} trace ids refuse the export. `nowMicros` places a rootless trace's time.
 */
export function draftExport(decoded: OtlpExport, workspaceSlug: string | undefined, nowMicros: number): DraftedExport {
  const grouped = groupSpans(decoded);
  if (grouped.groups.length > MAX_TRACES_PER_EXPORT) {
    throw new MalformedBodyError(
      `Malformed body: the export holds ${grouped.groups.length} trace ids, more than the limit of ${MAX_TRACES_PER_EXPORT}; export smaller batches`,
    );
  }
  const traces = grouped.groups.map((group) => buildTrace(group, workspaceSlug, grouped.wellFormedText, nowMicros));
  return { traces, rejected: grouped.rejected, spanCount: grouped.spanCount };
}
