import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEvent, APIGatewayProxyEventV2, KinesisStreamRecord } from 'aws-lambda';
import { INGEST_ROUTE, OTLP_ROUTE } from '../../lambda/shared/service-constants.js';

/** The paths of the API's routes: API Gateway matches them literally. */
export const API_ROUTE_PATHS: readonly string[] = [INGEST_ROUTE.path, OTLP_ROUTE.path];
/** The stage the local gateway serves, as it appears in `requestContext.path`. */
export const LOCAL_STAGE = 'local';

/** One HTTP request as API Gateway receives it, before it becomes an event. */
export interface GatewayRequestInput {
  /** Defaults to the ingest route's method. */
  method?: string;
  /** The literal path; defaults to the ingest route. */
  path?: string;
  /** Header lines as sent, in order, repeats kept. */
  headers: readonly (readonly [string, string])[];
  /** A string is passed as it is; bytes are base64-encoded and flagged so. */
  body?: string | Buffer | null;
  /** Overrides the flag the body implies (a test of a lying gateway). */
  isBase64Encoded?: boolean;
  query?: URLSearchParams;
  requestId?: string;
  sourceIp?: string;
  protocol?: string;
  now?: Date;
}

/**
 * The REST API (v1) proxy event API Gateway sends: `headers` holds the last value of each name,
 * `multiValueHeaders` every value. Names become own properties even when they are `__proto__`,
 * as in an event decoded from JSON. Used by the local gateway, the tests and the bench.
 */
export function restApiEvent(input: GatewayRequestInput): APIGatewayProxyEvent {
  const method = input.method ?? INGEST_ROUTE.method;
  const path = input.path ?? INGEST_ROUTE.path;
  const resource = API_ROUTE_PATHS.includes(path) ? path : '/{proxy+}';
  const headers: Record<string, string> = {};
  const multiValueHeaders: Record<string, string[]> = {};
  for (const [name, value] of input.headers) {
    ownProperty(headers, name, value);
    ownProperty(multiValueHeaders, name, [...(Object.hasOwn(multiValueHeaders, name) ? (multiValueHeaders[name] as string[]) : []), value]);
  }
  const query: Record<string, string> = {};
  const multiQuery: Record<string, string[]> = {};
  for (const [name, value] of input.query ?? []) {
    ownProperty(query, name, value);
    ownProperty(multiQuery, name, [...(Object.hasOwn(multiQuery, name) ? (multiQuery[name] as string[]) : []), value]);
  }
  const hasQuery = Object.keys(query).length > 0;
  const requestId = input.requestId ?? randomUUID();
  const now = input.now ?? new Date();
  const userAgent = Object.entries(headers).find(([name]) => name.toLowerCase() === 'user-agent')?.[1] ?? null;
  return {
    resource,
    path,
    httpMethod: method,
    headers,
    multiValueHeaders,
    queryStringParameters: hasQuery ? query : null,
    multiValueQueryStringParameters: hasQuery ? multiQuery : null,
    pathParameters: null,
    stageVariables: null,
    ...eventBody(input),
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      authorizer: null,
      protocol: input.protocol ?? 'HTTP/1.1',
      httpMethod: method,
      identity: {
        accessKey: null,
        accountId: null,
        apiKey: null,
        apiKeyId: null,
        caller: null,
        clientCert: null,
        cognitoAuthenticationProvider: null,
        cognitoAuthenticationType: null,
        cognitoIdentityId: null,
        cognitoIdentityPoolId: null,
        principalOrgId: null,
        sourceIp: input.sourceIp ?? '127.0.0.1',
        user: null,
        userAgent,
        userArn: null,
      },
      path: `/${LOCAL_STAGE}${path}`,
      stage: LOCAL_STAGE,
      requestId,
      extendedRequestId: requestId,
      requestTime: now.toUTCString(),
      requestTimeEpoch: now.getTime(),
      resourceId: 'local',
      resourcePath: resource,
    },
  };
}

/**
 * The HTTP API (v2) event of the same request: header names lower-cased and repeated headers joined
 * with commas, as HTTP APIs send them.
 */
export function httpApiEvent(input: GatewayRequestInput): APIGatewayProxyEventV2 {
  const method = input.method ?? INGEST_ROUTE.method;
  const path = input.path ?? INGEST_ROUTE.path;
  const headers: Record<string, string> = {};
  for (const [name, value] of input.headers) {
    const key = name.toLowerCase();
    ownProperty(headers, key, Object.hasOwn(headers, key) ? `${headers[key]},${value}` : value);
  }
  const { body, isBase64Encoded } = eventBody(input);
  const requestId = input.requestId ?? randomUUID();
  const now = input.now ?? new Date();
  return {
    version: '2.0',
    routeKey: `${method} ${path}`,
    rawPath: path,
    rawQueryString: input.query?.toString() ?? '',
    headers,
    ...(body === null ? {} : { body }),
    isBase64Encoded,
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      domainName: 'localhost',
      domainPrefix: 'localhost',
      http: { method, path, protocol: input.protocol ?? 'HTTP/1.1', sourceIp: input.sourceIp ?? '127.0.0.1', userAgent: headers['user-agent'] ?? '' },
      requestId,
      routeKey: `${method} ${path}`,
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
  };
}

/** One stream record as it sits in a Kinesis shard. */
export interface StreamRecordInput {
  shardId: string;
  sequenceNumber: string;
  partitionKey: string;
  data: Uint8Array;
  arrivedAt: Date;
  streamArn: string;
  region: string;
}

/** The record of a `KinesisStreamEvent`, as the event source mapping delivers it to the landing Lambda. */
export function kinesisEventRecord(record: StreamRecordInput): KinesisStreamRecord {
  return {
    kinesis: {
      kinesisSchemaVersion: '1.0',
      partitionKey: record.partitionKey,
      sequenceNumber: record.sequenceNumber,
      data: Buffer.from(record.data).toString('base64'),
      approximateArrivalTimestamp: record.arrivedAt.getTime() / 1000,
    },
    eventSource: 'aws:kinesis',
    eventVersion: '1.0',
    eventID: `${record.shardId}:${record.sequenceNumber}`,
    eventName: 'aws:kinesis:record',
    invokeIdentityArn: 'arn:aws:iam::000000000000:role/landing',
    awsRegion: record.region,
    eventSourceARN: record.streamArn,
  };
}

function eventBody(input: GatewayRequestInput): { body: string | null; isBase64Encoded: boolean } {
  const raw = input.body ?? null;
  const body = raw === null || typeof raw === 'string' ? raw : raw.toString('base64');
  return { body, isBase64Encoded: input.isBase64Encoded ?? Buffer.isBuffer(raw) };
}

function ownProperty(target: Record<string, unknown>, name: string, value: unknown): void {
  Object.defineProperty(target, name, { value, enumerable: true, writable: true, configurable: true });
}
