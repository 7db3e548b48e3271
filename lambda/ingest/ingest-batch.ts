import { createHash } from 'node:crypto';
import type { IdempotencyStore } from '../shared/adapters/dynamodb-idempotency-store.js';
import type { RateLimiter } from '../shared/adapters/dynamodb-rate-limiter.js';
import type { StreamRecord, TraceSink } from '../shared/adapters/kinesis-trace-sink.js';
import type { OverflowStore } from '../shared/adapters/s3-overflow-store.js';
import { DependencyUnavailableError } from '../shared/domain/errors.js';
import { countersFor, decisiveWindow, RETRY_AFTER_SECONDS, WINDOW_LABEL, type WindowCounter } from '../shared/domain/rate-windows.js';
import { type ApiKey, hashApiKey, isWellFormedApiKey, type Organization, WORKSPACE_SLUG_PATTERN } from '../shared/domain/tenancy.js';
import type { AcceptedTrace, TraceContext } from '../shared/domain/trace.js';
import {
  compressRecordJson,
  MAX_INLINE_RECORD_BYTES,
  overflowObjectKey,
  TRACE_RECORD_VERSION,
  type TraceReferenceRecord,
} from '../shared/domain/trace-record.js';
import {
  IdempotencyInProgressError,
  IdempotencyKeyReusedError,
  InvalidApiKeyError,
  InvalidIdempotencyKeyError,
  NoActivePlanError,
  PaymentRequiredError,
  RateLimitedError,
  UnavailableError,
  WorkspaceOutOfScopeError,
  WorkspaceRequiredError,
} from './errors.js';
import { decodeBody, type RawBody } from './request/decode-body.js';
import { parseBatch } from './request/parse-batch.js';
import type { TenancyReader } from './tenancy-cache.js';
import type { ValidationIssue } from './validation/issue-codes.js';
import { formatMicros } from './validation/timestamps.js';
import { validateTrace } from './validation/validate-trace.js';

export interface IngestDeps {
  tenancy: TenancyReader;
  rateLimiter: RateLimiter;
  sink: TraceSink;
  overflow: OverflowStore;
  /** Absent: the Idempotency-Key header is ignored. */
  idempotency?: IdempotencyStore;
  newId: () => string;
  log: { warn(message: string, extra?: Record<string, unknown>): void; error(message: string, extra?: Record<string, unknown>): void };
}

export interface IngestRequest {
  requestId: string;
  /** Every value of every `X-API-Key` header sent; exactly one distinct value is valid. */
  apiKeyValues: readonly string[];
  body: RawBody;
  receivedAtMicros: number;
  /** Every value of every `Idempotency-Key` header sent. */
  idempotencyKeyValues?: readonly string[];
}

export interface TraceError {
  index: number;
  trace_id: string | null;
  issues: ValidationIssue[];
}

export interface IngestResult {
  accepted: number;
  rejected: number;
  errors: TraceError[];
  /** What the request was authorized as, for logs and metrics. */
  orgId: string;
  apiKeyId: string;
  /** True when this is the stored response of an earlier request with the same Idempotency-Key. */
  replayed?: boolean;
}

/** Printable ASCII without spaces, 1 to 255 characters: a UUID, a ULID or any client token fits. */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

function parseIdempotencyKey(values: readonly string[] | undefined): string | undefined {
  const distinct = new Set((values ?? []).map((v) => v.trim()));
  if (distinct.size === 0) return undefined;
  const [key] = distinct as unknown as [string];
  if (distinct.size > 1 || !IDEMPOTENCY_KEY_PATTERN.test(key)) {
    throw new InvalidIdempotencyKeyError(
      'Invalid Idempotency-Key: send one header of 1 to 255 printable ASCII characters without spaces',
    );
  }
  return key;
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const RETRY_AFTER_UNAVAILABLE_SECONDS = 5;
/** Client values quoted back in a response are cut here, so no input can blow up the answer. */
const MAX_ECHO_CHARACTERS = 256;

function echo(value: string): string {
  return value.length <= MAX_ECHO_CHARACTERS ? value : `${value.slice(0, MAX_ECHO_CHARACTERS)}…`;
}

async function authenticate(tenancy: TenancyReader, values: readonly string[]): Promise<ApiKey> {
  const distinct = new Set(values.map((v) => v.trim()));
  if (distinct.size === 0) throw new InvalidApiKeyError('Invalid or missing API key: send your key in the X-API-Key header');
  if (distinct.size > 1) throw new InvalidApiKeyError('Invalid or missing API key: send exactly one X-API-Key header');
  const [secret] = distinct as unknown as [string];
  if (!isWellFormedApiKey(secret)) throw new InvalidApiKeyError('Invalid or missing API key: the X-API-Key value is not a valid key');
  const key = await tenancy.getApiKeyByHash(hashApiKey(secret));
  if (!key || key.status !== 'active') throw new InvalidApiKeyError('Invalid or missing API key: the key is unknown or revoked');
  return key;
}

async function authorizeOrganization(tenancy: TenancyReader, key: ApiKey): Promise<Organization> {
  const org = await tenancy.getOrganization(key.orgId);
  if (!org || org.planStatus !== 'active') {
    throw new NoActivePlanError('Organization has no active plan: activate a plan to ingest traces');
  }
  if (org.billingStatus !== 'ok') {
    throw new PaymentRequiredError('Payment required: the organization has a billing issue; settle it to resume ingest');
  }
  return org;
}

/** Decisions §1 rows 6 and 7: every trace object must target a workspace the key may reach. */
async function checkWorkspaceScope(tenancy: TenancyReader, key: ApiKey, traces: readonly unknown[]): Promise<void> {
  if (key.workspaceSlug !== null) {
    traces.forEach((trace, index) => {
      if (!isObject(trace)) return;
      const slug = trace.workspace_slug;
      if (typeof slug !== 'string' || slug === '') {
        throw new WorkspaceRequiredError(
          `workspace_slug is required on every trace for a workspace-scoped API key: trace ${index} has none`,
        );
      }
    });
    traces.forEach((trace) => {
      if (isObject(trace) && trace.workspace_slug !== key.workspaceSlug) {
        throw new WorkspaceOutOfScopeError(`workspace_slug '${echo(String(trace.workspace_slug))}' is not in the API key scope`);
      }
    });
    return;
  }
  const slugs = new Set<string>();
  for (const trace of traces) {
    if (isObject(trace) && typeof trace.workspace_slug === 'string' && trace.workspace_slug !== '') slugs.add(trace.workspace_slug);
  }
  const ordered = [...slugs];
  // A slug no workspace can have needs no lookup (and may not even fit in a DynamoDB key).
  const exists = await Promise.all(
    ordered.map((slug) => (WORKSPACE_SLUG_PATTERN.test(slug) ? tenancy.workspaceExists(key.orgId, slug) : false)),
  );
  const outside = ordered.find((_, i) => !exists[i]);
  if (outside !== undefined) {
    throw new WorkspaceOutOfScopeError(
      `workspace_slug '${echo(outside)}' is not in the API key scope: no such workspace in this organization`,
    );
  }
}

function rateLimited(counters: readonly WindowCounter[], count: number, batchTooLarge: boolean): RateLimitedError {
  const decisive = decisiveWindow(counters) as WindowCounter;
  const label = WINDOW_LABEL[decisive.window];
  const message = batchTooLarge
    ? `Rate limit exceeded: this batch of ${count} traces is larger than the whole ${label} quota of ${decisive.quota}; split the batch`
    : `Rate limit exceeded: the ${label} quota of ${decisive.quota} traces is used up; retry after the Retry-After interval`;
  return new RateLimitedError(message, decisive.window, decisive.quota, RETRY_AFTER_SECONDS[decisive.window]);
}

type RequestContext = Omit<TraceContext, 'workspace_slug' | 'record_id'>;

/** An accepted trace, already serialised and compressed as its stream record. */
interface EncodedTrace {
  context: TraceContext;
  /** Index of the trace in the request's `traces`. */
  index: number;
  traceId: string;
  data: Buffer;
}

// Encoded as soon as it validates, so the normalized copy dies young instead of outliving the
// reserve: ~5% less handler CPU on a full batch (npm run bench), at the price of encoding a batch
// that the rate windows then refuse.
function encodeTrace(requestContext: RequestContext, requestIdentity: string, index: number, trace: AcceptedTrace): EncodedTrace {
  const context: TraceContext = { ...requestContext, workspace_slug: trace.workspace_slug, record_id: `${requestIdentity}/${index}` };
  return { context, index, traceId: trace.trace_id, data: compressRecordJson(JSON.stringify({ v: TRACE_RECORD_VERSION, context, trace })) };
}

async function toStreamRecords(deps: IngestDeps, traces: readonly EncodedTrace[]): Promise<StreamRecord[]> {
  return Promise.all(
    traces.map(async ({ context, index, traceId, data }) => {
      if (data.byteLength + traceId.length <= MAX_INLINE_RECORD_BYTES) return { partitionKey: traceId, data };
      // Too large for one record: the body goes to S3 and the stream carries a pointer (decisions §4).
      const stored = await deps.overflow.put(overflowObjectKey(context, index, traceId), data);
      const pointer: TraceReferenceRecord = {
        v: TRACE_RECORD_VERSION,
        context,
        ref: { ...stored, bytes: data.byteLength, trace_id: traceId },
      };
      return { partitionKey: traceId, data: compressRecordJson(JSON.stringify(pointer)) };
    }),
  );
}

// One rule at every size: two traces of a batch with one trace_id would otherwise land as two rows
// (inline) or as one trace's content twice (by reference), and collapse into one in compacted tables.
function duplicateTraceId(firstIndex: number): ValidationIssue {
  return { path: '/trace_id', code: 'duplicate_trace_id', message: `repeats the trace_id of trace ${firstIndex}, accepted earlier in this batch` };
}

function unavailable(error: unknown): UnavailableError {
  const dependency = error instanceof DependencyUnavailableError ? error.dependency : 'a dependency';
  return new UnavailableError(
    `Service temporarily unavailable: ${dependency} did not answer in time; nothing was accepted, retry the whole batch`,
    RETRY_AFTER_UNAVAILABLE_SECONDS,
    { cause: error },
  );
}

/**
 * The ingest use case, in the order of decisions §1: authenticate, plan, billing, body, scope,
 * per-trace validation, rate windows, publish. Throws an {@link IngestError} for every refusal.
 */
export async function ingestBatch(deps: IngestDeps, request: IngestRequest): Promise<IngestResult> {
  const key = await authenticate(deps.tenancy, request.apiKeyValues);
  const org = await authorizeOrganization(deps.tenancy, key);
  const idempotencyKey = deps.idempotency ? parseIdempotencyKey(request.idempotencyKeyValues) : undefined;
  const text = decodeBody(request.body);
  if (!deps.idempotency || idempotencyKey === undefined) return processBatch(deps, request, key, org, text, request.requestId);
  const identity = idempotentRequestIdentity(org.orgId, idempotencyKey, text);
  return withIdempotency(deps.idempotency, deps, org.orgId, key.keyId, idempotencyKey, text, request.receivedAtMicros, () =>
    processBatch(deps, request, key, org, text, identity),
  );
}

/**
 * The identity of a request sent under an Idempotency-Key, the same for every resend of that body
 * with that key, so the records of a resend after an unknown outcome are copies of the first ones.
 */
export function idempotentRequestIdentity(orgId: string, idempotencyKey: string, text: string): string {
  return `idem-${createHash('sha256').update(`${orgId}\n${idempotencyKey}\n`).update(text, 'utf8').digest('base64url')}`;
}

/**
 * Safe retries: the first request with a key claims it; a repeat with the same body gets the first
 * 200 again without counting or publishing; a different body gets 422; a repeat while the first
 * is still running gets 409. Only a 200 is remembered: any refusal frees the key for a retry.
 */
async function withIdempotency(
  store: IdempotencyStore,
  deps: IngestDeps,
  orgId: string,
  apiKeyId: string,
  idempotencyKey: string,
  text: string,
  receivedAtMicros: number,
  run: () => Promise<IngestResult>,
): Promise<IngestResult> {
  const bodyHash = createHash('sha256').update(text, 'utf8').digest('base64url');
  const nowSeconds = Math.floor(receivedAtMicros / 1_000_000);
  let claim;
  try {
    claim = await store.claim(orgId, idempotencyKey, bodyHash, nowSeconds);
  } catch (error) {
    throw unavailable(error);
  }
  if (claim.kind !== 'claimed') {
    if (claim.bodyHash !== bodyHash) {
      throw new IdempotencyKeyReusedError(
        'Idempotency-Key reused with a different body: a key identifies one request; use a new key for a new batch',
      );
    }
    if (claim.kind === 'in_progress') {
      throw new IdempotencyInProgressError('A request with this Idempotency-Key is still in progress; retry after the Retry-After interval');
    }
    const stored = JSON.parse(claim.response) as Pick<IngestResult, 'accepted' | 'rejected' | 'errors'>;
    return { accepted: stored.accepted, rejected: stored.rejected, errors: stored.errors, orgId, apiKeyId, replayed: true };
  }
  let result: IngestResult;
  try {
    result = await run();
  } catch (error) {
    await store.release(orgId, idempotencyKey).catch((releaseError: unknown) => {
      deps.log.error('Could not release an idempotency claim', { orgId, error: (releaseError as Error).name });
    });
    throw error;
  }
  const response = JSON.stringify({ accepted: result.accepted, rejected: result.rejected, errors: result.errors });
  const stored = await store.complete(orgId, idempotencyKey, response, nowSeconds).catch((error: unknown) => {
    deps.log.error('Could not store an idempotent response', { orgId, error: (error as Error).name });
    return false;
  });
  // The batch is accepted either way; an unstored response only means a later repeat is not recognised.
  if (!stored) deps.log.warn('Idempotent response not stored; a repeat within the lock time gets 409', { orgId });
  return result;
}

async function processBatch(
  deps: IngestDeps,
  request: IngestRequest,
  key: ApiKey,
  org: Organization,
  text: string,
  requestIdentity: string,
): Promise<IngestResult> {
  const traces = parseBatch(text);
  await checkWorkspaceScope(deps.tenancy, key, traces);

  const requestContext: RequestContext = {
    org_id: org.orgId,
    api_key_id: key.keyId,
    request_id: request.requestId,
    received_at: formatMicros(request.receivedAtMicros),
  };
  const accepted: EncodedTrace[] = [];
  const errors: TraceError[] = [];
  const acceptedAt = new Map<string, number>();
  traces.forEach((input, index) => {
    const result = validateTrace(input, request.receivedAtMicros, deps.newId);
    const firstIndex = result.ok ? acceptedAt.get(result.trace.trace_id) : undefined;
    if (result.ok && firstIndex === undefined) {
      acceptedAt.set(result.trace.trace_id, index);
      accepted.push(encodeTrace(requestContext, requestIdentity, index, result.trace));
    } else {
      const sentId = isObject(input) && typeof input.trace_id === 'string' ? echo(input.trace_id) : null;
      const issues = result.ok ? [duplicateTraceId(firstIndex as number)] : result.issues;
      errors.push({ index, trace_id: sentId, issues });
    }
  });
  const result: IngestResult = { accepted: accepted.length, rejected: errors.length, errors, orgId: org.orgId, apiKeyId: key.keyId };
  if (accepted.length === 0) return result;

  const receivedAt = new Date(Math.floor(request.receivedAtMicros / 1000));
  const counters = countersFor(org.quotas, receivedAt);
  const tooSmall = counters.filter((counter) => counter.quota < accepted.length);
  if (tooSmall.length > 0) throw rateLimited(tooSmall, accepted.length, true);
  let decision;
  try {
    decision = await deps.rateLimiter.reserve(org.orgId, counters, accepted.length, request.requestId);
  } catch (error) {
    // The reserve may have been applied with only its answer lost; giving back is exact either way.
    await giveBack(deps, org.orgId, counters, accepted.length, request.requestId);
    throw unavailable(error);
  }
  if (!decision.allowed) throw rateLimited(decision.overflowing, accepted.length, false);

  try {
    await deps.sink.publish(await toStreamRecords(deps, accepted));
  } catch (error) {
    await giveBack(deps, org.orgId, counters, accepted.length, request.requestId);
    throw unavailable(error);
  }
  return result;
}

async function giveBack(deps: IngestDeps, orgId: string, counters: WindowCounter[], count: number, requestId: string) {
  try {
    await deps.rateLimiter.release(orgId, counters, count, requestId);
  } catch (error) {
    // The counters stay too high until their windows pass: the safe direction for a quota.
    deps.log.error('Could not give back rate-window increments', { orgId, count, error: (error as Error).name });
  }
}
