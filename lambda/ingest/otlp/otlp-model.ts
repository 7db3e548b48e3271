import type { JsonObject } from '../../shared/domain/json.js';

/**
 * One decoded OTLP export, whichever encoding it came in: the protobuf and OTLP/JSON decoders both
 * produce this shape, and the mapping reads nothing else. Attribute values are already plain JSON.
 */

export interface OtlpEvent {
  name: string;
  /** The event's `time_unix_nano` in whole microseconds (the precision stored), as every time here. */
  timeUnixMicros: number;
  attributes: JsonObject;
}

export interface OtlpSpan {
  /** Lower-case hex as sent; validity (32 hex digits, not all zero) is checked by the mapping. */
  traceId: string;
  spanId: string;
  /** `""` for a root span. */
  parentSpanId: string;
  name: string;
  /** `Span.SpanKind` as its enum number. */
  kind: number;
  /**
   * `start_time_unix_nano` in whole microseconds, the nanoseconds truncated: exact below 2^53 µs (year 2255);
   * past that (a fixed64 reaches 1.8e16 µs) rounded to the nearest double, still far in the future.
   */
  startTimeUnixMicros: number;
  endTimeUnixMicros: number;
  attributes: JsonObject;
  events: OtlpEvent[];
  /** `Status.StatusCode`: 0 unset, 1 ok, 2 error. */
  statusCode: number;
  statusMessage: string;
  traceState: string;
  /** Why the span cannot be used as decoded (an attribute nested too deep), if anything. */
  problem?: string;
}

export interface OtlpScopeSpans {
  scopeName: string;
  scopeVersion: string;
  spans: OtlpSpan[];
}

export interface OtlpResourceSpans {
  resourceAttributes: JsonObject;
  scopeSpans: OtlpScopeSpans[];
}

export interface OtlpExport {
  resourceSpans: OtlpResourceSpans[];
  /**
   * True when no decoded string can hold a lone surrogate: protobuf strings are strict UTF-8, and OTLP/JSON
   * text without a surrogate escape (`mayHoldLoneSurrogates`) parses to none.
   */
  wellFormedText: boolean;
}

/** `AnyValue`s nested deeper than this (arrays and key-value lists) make their span invalid. */
export const MAX_VALUE_DEPTH = 32;

/** The `problem` of a span with an attribute (its own or an event's) nested deeper than {@link MAX_VALUE_DEPTH}. */
export const VALUE_TOO_DEEP = `an attribute value nests arrays or key-value lists deeper than ${MAX_VALUE_DEPTH} levels`;

/** Thrown while converting a value nested deeper than {@link MAX_VALUE_DEPTH}. */
export class ValueTooDeepError extends Error {
  override name = 'ValueTooDeepError';
}

/** Throws {@link ValueTooDeepError} for an array or key-value list at `depth`, when that is too deep. */
export function checkNestingDepth(depth: number): void {
  if (depth >= MAX_VALUE_DEPTH) throw new ValueTooDeepError(VALUE_TOO_DEEP);
}

/** Attributes as converted, and why they could not be used, if they could not. */
export interface ConvertedAttributes {
  attributes: JsonObject;
  problem?: string;
}

/** Runs `convert` on an attribute list, turning a too-deep value into the span's `problem`. */
export function convertAttributes<T>(list: readonly T[] | null | undefined, convert: (item: T, target: JsonObject) => void): ConvertedAttributes {
  const attributes: JsonObject = {};
  if (!list) return { attributes };
  try {
    for (const item of list) convert(item, attributes);
  } catch (error) {
    if (error instanceof ValueTooDeepError) return { attributes: {}, problem: error.message };
    throw error;
  }
  return { attributes };
}

/** An event as a decoder reads it, its attributes still carrying their problem. */
export interface DecodedEvent {
  name: string;
  timeUnixMicros: number;
  converted: ConvertedAttributes;
}

/** A span's own fields, as a decoder reads them. */
export type SpanFields = Omit<OtlpSpan, 'attributes' | 'events' | 'problem'>;

/** Joins a span's fields, attributes and events; the span's problem is its attributes', else its first event's. */
export function assembleSpan(fields: SpanFields, own: ConvertedAttributes, events: readonly DecodedEvent[]): OtlpSpan {
  const span: OtlpSpan = {
    ...fields,
    attributes: own.attributes,
    events: events.map(({ name, timeUnixMicros, converted }) => ({ name, timeUnixMicros, attributes: converted.attributes })),
  };
  const problem = own.problem ?? events.find((event) => event.converted.problem !== undefined)?.converted.problem;
  if (problem !== undefined) span.problem = problem;
  return span;
}
