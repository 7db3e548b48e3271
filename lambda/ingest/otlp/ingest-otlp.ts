import { MalformedBodyError, refusal, refusedFor, WorkspaceRequiredError } from '../core/errors.js';
import { ingestCandidates } from '../core/ingest-candidates.js';
import type { Arrival, Caller, IngestResult } from '../core/ingest-types.js';
import type { IngestDeps } from '../core/ports.js';
import { decodeBodyBytes, decodeUtf8, type RawBody } from '../http/decode-body.js';
import { identifyCaller, singleHeaderValue } from '../core/tenancy/identify-caller.js';
import { type BuiltTrace, draftExport, type RejectedSpan } from './map-export.js';
import { decodeExportRequestJson } from './otlp-json.js';
import type { OtlpExport } from './otlp-model.js';
import type { QuotaState } from '../core/rate/quota-headers.js';
import { decodeExportRequest } from './protobuf/decode-export-request.js';
import { UndecodableRequestError } from './protobuf/undecodable-request-error.js';

/** The two OTLP/HTTP encodings; the answer is written in the request's. */
export type OtlpFormat = 'protobuf' | 'json';

/** Rejection reasons quoted in `error_message`; the count covers the rest. */
const MAX_REASONS = 5;

export interface OtlpRequest extends Arrival {
  apiKeyValues: readonly string[];
  /** Every value of every `X-Workspace-Slug` header: the workspace the export goes to. */
  workspaceSlugValues: readonly string[];
  /** Undefined when the `Content-Type` is neither OTLP encoding. */
  format: OtlpFormat | undefined;
  body: RawBody;
}

export interface OtlpResult {
  acceptedSpans: number;
  rejectedSpans: number;
  /** Empty when nothing was rejected; otherwise names the problems, as `partial_success` says them. */
  errorMessage: string;
  /** Traces accepted (what the rate windows counted). */
  acceptedTraces: number;
  orgId: string;
  apiKeyId: string;
  /** The organization's windows after this export, for the `RateLimit` headers. */
  quotaState?: QuotaState[];
}

/** A `Content-Type` the endpoint does not read. */
export class UnsupportedMediaTypeError extends refusal(415, 'unsupported_media_type') {}

function decode(format: OtlpFormat, body: RawBody): OtlpExport {
  const bytes = decodeBodyBytes(body);
  try {
    return format === 'protobuf' ? decodeExportRequest(bytes) : decodeExportRequestJson(decodeUtf8(bytes));
  } catch (error) {
    if (error instanceof UndecodableRequestError) {
      throw new MalformedBodyError(`Malformed body: ${error.message}`, { cause: error });
    }
    throw error;
  }
}

function workspaceOf(values: readonly string[], scopedTo: string | null): string | undefined {
  const header = singleHeaderValue(values);
  if (header.kind === 'conflicting') throw new MalformedBodyError('Malformed body: send at most one X-Workspace-Slug header value');
  if (header.kind === 'one' && header.value !== '') return header.value;
  if (scopedTo !== null) {
    throw new WorkspaceRequiredError(
      'workspace_slug is required for a workspace-scoped API key: add X-Workspace-Slug=<slug> to OTEL_EXPORTER_OTLP_HEADERS',
    );
  }
  return undefined;
}

function describe(rejected: readonly RejectedSpan[]): string {
  if (rejected.length === 0) return '';
  const shown = rejected
    .slice(0, MAX_REASONS)
    .map((span) => `span ${span.spanId || '(none)'} of trace ${span.traceId || '(none)'}: ${span.reason}`);
  const more = rejected.length > MAX_REASONS ? `; and ${rejected.length - MAX_REASONS} more` : '';
  return `${rejected.length} span(s) rejected: ${shown.join('; ')}${more}`;
}

const issueText = (issues: readonly { path: string; code: string; message: string }[]) =>
  issues.map((issue) => `${issue.path} ${issue.code} (${issue.message})`).join(', ');

/** The spans validation left out: every span of a rejected trace, and the spans dropped from traces that landed. */
function rejectedByValidation(traces: readonly BuiltTrace[], result: Pick<IngestResult, 'errors' | 'droppedSpans'>): RejectedSpan[] {
  const rejected: RejectedSpan[] = [];
  for (const error of result.errors) {
    const trace = traces[error.index] as BuiltTrace;
    for (const span of trace.spans) rejected.push({ traceId: trace.traceHex, spanId: span.spanHex, reason: `trace ${issueText(error.issues)}` });
  }
  for (const dropped of result.droppedSpans ?? []) {
    const trace = traces[dropped.index] as BuiltTrace;
    for (const { spanIndex, issues } of dropped.spans) {
      rejected.push({ traceId: trace.traceHex, spanId: trace.spans[spanIndex]?.spanHex ?? '', reason: issueText(issues) });
    }
  }
  return rejected;
}

/**
 * OTLP/HTTP trace export into the one ingest pipeline: the caller is identified as on the JSON
 * endpoint, the body decoded and mapped to TraceIngest objects (one per trace id), then workspace
 * scope, validation, rate windows and publishing run as for any batch. Invalid spans are left out
 * and reported, as OTLP's `partial_success`.
 */
export async function ingestOtlp(deps: IngestDeps, request: OtlpRequest): Promise<OtlpResult> {
  const caller = await identifyCaller(deps, request.apiKeyValues);
  return refusedFor(caller.org.orgId, () => ingestExportOf(deps, caller, request));
}

async function ingestExportOf(deps: IngestDeps, caller: Caller, request: OtlpRequest): Promise<OtlpResult> {
  if (request.format === undefined) {
    throw new UnsupportedMediaTypeError(
      'Unsupported Content-Type: send OTLP as application/x-protobuf or application/json (OTEL_EXPORTER_OTLP_PROTOCOL http/protobuf or http/json)',
    );
  }
  const decoded = decode(request.format, request.body);
  const workspaceSlug = workspaceOf(request.workspaceSlugValues, caller.key.workspaceSlug);
  const drafted = draftExport(decoded, workspaceSlug, request.receivedAtMicros);
  const result = await ingestCandidates(deps, caller, request, drafted.traces.map((trace) => trace.draft));
  const rejected = [...drafted.rejected, ...rejectedByValidation(drafted.traces, result)];
  const base = { orgId: caller.org.orgId, apiKeyId: caller.key.keyId };
  const acceptedSpans = drafted.spanCount - rejected.length;
  return { ...base, acceptedSpans, rejectedSpans: rejected.length, errorMessage: describe(rejected), acceptedTraces: result.accepted, quotaState: result.quotaState };
}
