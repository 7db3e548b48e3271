import { DependencyUnavailableError, PublishIncompleteError } from '../../shared/domain/errors.js';
import type { RateWindow } from '../../shared/domain/tenancy.js';
import type { QuotaState } from './rate/quota-headers.js';

/** `Retry-After` of every 503: long enough for a throttled dependency to recover. */
export const RETRY_AFTER_UNAVAILABLE_SECONDS = 5;

/**
 * Why a request was refused. Each refusal carries its own answer, the way middy's `createError`
 * does: the HTTP `status`, the stable machine-readable `code` of the contract (docs/api.md) and,
 * where a retry can succeed, `retryAfterSeconds`. `http.ts` writes every response from these alone.
 */
export abstract class IngestError extends Error {
  abstract readonly status: number;
  abstract readonly code: string;
  /** Seconds for the `Retry-After` header; undefined where resending the same request cannot help. */
  readonly retryAfterSeconds: number | undefined = undefined;
  /** The organization's windows, for the `RateLimit` headers of a 429 (set where the refusal was made). */
  quotaState: QuotaState[] | undefined = undefined;
  /** The organization refused, once the key has identified it: for the log, never the answer. */
  orgId: string | undefined = undefined;
  override name = this.constructor.name;

  /** Fields of the JSON body beyond `detail`, `code` and `request_id`. */
  bodyFields(): Record<string, unknown> {
    return {};
  }
}

/**
 * The base of one kind of refusal: its status, its code and, where resending can succeed, its
 * `Retry-After`. Each refusal below stays a class of its own, so `instanceof` and the logged name
 * still tell them apart.
 */
export function refusal(status: number, code: string, retryAfterSeconds?: number) {
  return class extends IngestError {
    readonly status = status;
    readonly code = code;
    override readonly retryAfterSeconds = retryAfterSeconds;
  };
}

/** Runs the work of an identified organization: a refusal it throws names the organization in the log. */
export async function refusedFor<T>(orgId: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof IngestError) error.orgId ??= orgId;
    throw error;
  }
}

/** The API key is missing, malformed, unknown or revoked. */
export class InvalidApiKeyError extends refusal(401, 'invalid_api_key') {}
/** The organization has a billing issue. */
export class PaymentRequiredError extends refusal(402, 'payment_required') {}
/** The organization has no active plan. */
export class NoActivePlanError extends refusal(403, 'no_active_plan') {}
/** The body, or a header the body depends on, cannot be read as the contract says. */
export class MalformedBodyError extends refusal(400, 'malformed_body') {}
/** The decoded body is over the request-size ceiling (`MAX_DECODED_BODY_BYTES`): resending cannot help, splitting does. */
export class BatchTooLargeError extends refusal(413, 'batch_too_large') {}
/** A workspace-scoped key sent traces without a workspace. */
export class WorkspaceRequiredError extends refusal(400, 'workspace_required') {}
/** A workspace outside the key's scope, or not in the organization. */
export class WorkspaceOutOfScopeError extends refusal(403, 'workspace_out_of_scope') {}
/** The `Idempotency-Key` header is not one valid key. */
export class InvalidIdempotencyKeyError extends refusal(400, 'invalid_idempotency_key') {}
/** The same Idempotency-Key was used with a different body. */
export class IdempotencyKeyReusedError extends refusal(422, 'idempotency_key_reused') {}
/** A request with the same Idempotency-Key is still being processed. */
export class IdempotencyInProgressError extends refusal(409, 'idempotency_in_progress', 1) {}

/** How full the decisive window was: traces counted, room left, and what the batch asked for. */
export interface WindowUsage {
  used: number;
  remaining: number;
  requested: number;
}

/** A rate window would overflow: names the window, its limit, how full it is and when to retry. */
export class RateLimitedError extends refusal(429, 'rate_limited') {
  constructor(
    message: string,
    readonly window: RateWindow,
    readonly limit: number,
    override readonly retryAfterSeconds: number,
    readonly usage?: WindowUsage,
  ) {
    super(message);
  }

  override bodyFields(): Record<string, unknown> {
    return { window: this.window, limit: this.limit, ...this.usage };
  }
}

/**
 * A batch larger than a window's whole quota: waiting can never help, so it has a code of its own
 * (`Retry-After` stays, as the contract asks of every 429) and clients split the batch instead.
 */
export class BatchExceedsQuotaError extends RateLimitedError {
  override readonly code = 'batch_exceeds_quota';
}

/** A dependency still failing after bounded retries, or an unexpected error: nothing of the batch was accepted. */
export class UnavailableError extends refusal(503, 'unavailable', RETRY_AFTER_UNAVAILABLE_SECONDS) {}

/**
 * The 503 for a publish whose outcome is not known for every trace: some may be stored. Resending
 * under the same Idempotency-Key gives the records the same `record_id`, so the copies land once.
 */
export class OutcomeUnknownError extends UnavailableError {
  override bodyFields(): Record<string, unknown> {
    return { may_have_been_accepted: true };
  }
}

/** The function's deadline reached with the work still in flight: part of the batch may have been accepted. */
export class DeadlineReachedError extends OutcomeUnknownError {}

/** The 503 of a request that reached its deadline with work in flight. */
export function deadlineReached(options?: ErrorOptions): DeadlineReachedError {
  return new DeadlineReachedError(
    'Service temporarily unavailable: the request did not finish in time and part of the batch may have been accepted; resend it with the same Idempotency-Key',
    options,
  );
}

/**
 * The 503 for a failed publish: honest about whether anything of the batch may be stored, and saying so as a
 * deadline answer when the request's deadline (`atDeadline`) is what ended it.
 */
export function publishUnavailable(error: unknown, atDeadline = false): UnavailableError {
  if (!(error instanceof PublishIncompleteError) || error.nothingWritten) return dependencyUnavailable(error);
  if (atDeadline) return deadlineReached({ cause: error });
  return new OutcomeUnknownError(
    `Service temporarily unavailable: ${error.dependency} did not confirm every trace; part or all of the batch may have been accepted; ` +
      'retry the whole batch with the same Idempotency-Key so that traces already stored are stored once',
    { cause: error },
  );
}

/** The 503 for a dependency that did not answer: names the dependency, keeps the cause for the log. */
export function dependencyUnavailable(error: unknown): UnavailableError {
  const dependency = error instanceof DependencyUnavailableError ? error.dependency : 'a dependency';
  return new UnavailableError(
    `Service temporarily unavailable: ${dependency} did not answer in time; nothing was accepted, retry the whole batch`,
    { cause: error },
  );
}
