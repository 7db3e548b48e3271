import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { AcceptedSpan, AcceptedTrace } from '../../lambda/shared/domain/trace.js';
import { INGEST_ROUTE, OTLP_ROUTE } from '../../lambda/shared/service-constants.js';
import { lambdaContext as localLambdaContext } from '../lambda/lambda-context.js';
import { restApiEvent } from '../lambda/lambda-events.js';

/** A fixed server clock for tests: 2026-11-22T12:00:00Z. */
export const NOW_MS = Date.UTC(2026, 10, 22, 12, 0, 0);
export const NOW_MICROS = NOW_MS * 1000;
export const iso = (offsetMs = 0, baseMs = NOW_MS) => new Date(baseMs + offsetMs).toISOString();

type Json = Record<string, unknown>;

/** A small successful LLM call, all but its ids, time and name: where fixed-value span builders start. */
export const SMALL_SPAN: Omit<AcceptedSpan, 'span_id' | 'parent_span_id' | 'timestamp' | 'name'> = {
  duration_ms: 12.5,
  kind: 'llm',
  status: 'ok',
  model: 'gpt-4o',
  input_tokens: 10,
  output_tokens: 5,
  total_tokens: 15,
  input: '{"q":"hello"}',
  output: '{"a":"world"}',
  attributes: '{"tags":["prod"]}',
  error_message: null,
  session_id: 's-1',
  agent_id: 'a-1',
  agent_name: 'planner',
  user_id: 'u-1',
};

/** The trace around such calls, all but its id, time, workspace and spans. */
export const SMALL_TRACE: Omit<AcceptedTrace, 'trace_id' | 'timestamp' | 'workspace_slug' | 'spans'> = {
  environment: 'production',
  duration_ms: 99.5,
  root_span_name: 'planner',
  status: 'ok',
  model: 'gpt-4o',
  input_tokens: 20,
  output_tokens: 10,
  total_tokens: 30,
  attributes: '{}',
  session_id: 's-1',
  agent_id: 'a-1',
  agent_name: 'planner',
  user_id: 'u-1',
};

/** `baseMs` is the clock the timestamps are near: the fixed test clock unless a test runs on the real one. */
export function buildSpan(overrides: Json = {}, index = 0, baseMs = NOW_MS): Json {
  return {
    span_id: randomUUID(),
    parent_span_id: null,
    timestamp: iso(index * 10, baseMs),
    duration_ms: 120.5,
    name: `step-${index}`,
    kind: 'llm',
    status: 'ok',
    model: 'gpt-4o',
    input_tokens: 120,
    output_tokens: 48,
    total_tokens: 168,
    input: JSON.stringify({ messages: [{ role: 'user', content: `What is step ${index}? ${'context '.repeat(20)}` }] }),
    output: JSON.stringify({ role: 'assistant', content: `Step ${index} is ${'an answer '.repeat(30)}` }),
    attributes: JSON.stringify({ tags: ['prod', `step-${index}`], temperature: 0.2 }),
    error_message: null,
    session_id: 'session-1',
    agent_id: 'agent-7',
    agent_name: 'planner',
    user_id: 'user-42',
    ...overrides,
  };
}

export function buildTrace(overrides: Json = {}, spanCount = 2, baseMs = NOW_MS): Json {
  const spans = Array.from({ length: spanCount }, (_, i) => buildSpan({}, i, baseMs));
  return {
    trace_id: randomUUID(),
    timestamp: iso(0, baseMs),
    environment: 'production',
    workspace_slug: '',
    duration_ms: 1234.5,
    root_span_name: 'planner',
    status: 'ok',
    model: 'gpt-4o',
    input_tokens: 240,
    output_tokens: 96,
    total_tokens: 336,
    attributes: JSON.stringify({ tags: ['prod'] }),
    session_id: 'session-1',
    agent_id: 'agent-7',
    agent_name: 'planner',
    user_id: 'user-42',
    spans,
    ...overrides,
  };
}

export function buildBatch(count: number, overrides: Json = {}, spanCount = 2, baseMs = NOW_MS): { traces: Json[] } {
  return { traces: Array.from({ length: count }, () => buildTrace(overrides, spanCount, baseMs)) };
}

/** Timestamps near the real clock, for handlers that run on it (integration tests against real engines). */
export const liveTrace = (overrides: Json = {}, spanCount = 2): Json => buildTrace(overrides, spanCount, Date.now());
export const liveBatch = (count: number, overrides: Json = {}, spanCount = 2): { traces: Json[] } =>
  buildBatch(count, overrides, spanCount, Date.now());

export interface EventOptions {
  /** One value per `X-API-Key` line; the last one is the header's single value. */
  apiKey?: string | string[];
  body?: string | Buffer | null;
  gzip?: boolean;
  headers?: Record<string, string>;
  requestId?: string;
  /** The route the request is sent to; the JSON ingest route unless said. */
  route?: 'ingest' | 'otlp';
}

/** The REST API (v1) proxy event API Gateway sends for one POST to the ingest (or OTLP) route. */
export function gatewayEvent(options: EventOptions = {}): APIGatewayProxyEvent {
  const headers: [string, string][] = Object.entries({ 'Content-Type': 'application/json', ...options.headers });
  const keys = options.apiKey === undefined ? [] : Array.isArray(options.apiKey) ? options.apiKey : [options.apiKey];
  for (const key of keys) headers.push(['X-API-Key', key]);
  const raw = options.body ?? null;
  if (options.gzip && raw !== null) headers.push(['Content-Encoding', 'gzip']);
  return restApiEvent({
    path: options.route === 'otlp' ? OTLP_ROUTE.path : INGEST_ROUTE.path,
    headers,
    body: options.gzip && raw !== null ? gzipSync(raw) : raw,
    requestId: options.requestId,
  });
}

/** A context whose deadline never comes closer, for tests that are not about it. */
export const lambdaContext = localLambdaContext({ functionName: 'ingest', frozen: true });
