import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { INGEST_ROUTE } from '../../lambda/shared/service-constants.js';
import { lambdaContext as localLambdaContext } from '../../scripts/local/lambda-context.js';

/** A fixed server clock for tests: 2026-11-22T12:00:00Z. */
export const NOW_MS = Date.UTC(2026, 10, 22, 12, 0, 0);
export const NOW_MICROS = NOW_MS * 1000;
export const iso = (offsetMs = 0, baseMs = NOW_MS) => new Date(baseMs + offsetMs).toISOString();

type Json = Record<string, unknown>;

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
  apiKey?: string | string[];
  body?: string | Buffer | null;
  gzip?: boolean;
  headers?: Record<string, string>;
  requestId?: string;
}

/** The REST API (v1) proxy event API Gateway sends for POST /v1/traces/ingest. */
export function gatewayEvent(options: EventOptions = {}): APIGatewayProxyEvent {
  const headers: Record<string, string> = { 'Content-Type': 'application/json', ...options.headers };
  const multiValueHeaders: Record<string, string[]> = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]]));
  const keys = options.apiKey === undefined ? [] : Array.isArray(options.apiKey) ? options.apiKey : [options.apiKey];
  if (keys.length > 0) {
    headers['X-API-Key'] = keys[keys.length - 1] as string;
    multiValueHeaders['X-API-Key'] = keys;
  }
  let body: string | null = null;
  let isBase64Encoded = false;
  const raw = options.body;
  if (raw !== undefined && raw !== null) {
    if (options.gzip) {
      headers['Content-Encoding'] = 'gzip';
      multiValueHeaders['Content-Encoding'] = ['gzip'];
      body = gzipSync(raw).toString('base64');
      isBase64Encoded = true;
    } else if (Buffer.isBuffer(raw)) {
      body = raw.toString('base64');
      isBase64Encoded = true;
    } else {
      body = raw;
    }
  }
  return {
    resource: INGEST_ROUTE.path,
    path: INGEST_ROUTE.path,
    httpMethod: INGEST_ROUTE.method,
    headers,
    multiValueHeaders,
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    pathParameters: null,
    stageVariables: null,
    body,
    isBase64Encoded,
    requestContext: { requestId: options.requestId ?? randomUUID() } as APIGatewayProxyEvent['requestContext'],
  };
}

/** A context whose deadline never comes closer, for tests that are not about it. */
export const lambdaContext = localLambdaContext({ functionName: 'ingest', frozen: true });
