import { DependencyUnavailableError, PublishIncompleteError } from '../shared/domain/errors.js';
import type { RateWindow } from '../shared/domain/tenancy.js';

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

  /** Fields of the JSON body beyond `detail`, `code` and `request_id`. */
  bodyFields(): Record<string, unknown> {
    return {};
  }
}

export class InvalidApiKeyError extends IngestError {
  override name = 'InvalidApiKeyError';
  readonly status = 401;
  readonly code = 'invalid_api_key';
}

export class NoActivePlanError extends IngestError {
  override name = 'NoActivePlanError';
  readonly status = 403;
  readonly code = 'no_active_plan';
}

export class PaymentRequiredError extends IngestError {
  override name = 'PaymentRequiredError';
  readonly status = 402;
  readonly code = 'payment_required';
}

export class PayloadTooLargeError extends IngestError {
  override name = 'PayloadTooLargeError';
  readonly status = 413;
  readonly code = 'payload_too_large';
}

export class MalformedBodyError extends IngestError {
  override name = 'MalformedBodyError';
  readonly status = 400;
  readonly code = 'malformed_body';
}

export class WorkspaceRequiredError extends IngestError {
  override name = 'WorkspaceRequiredError';
  readonly status = 400;
  readonly code = 'workspace_required';
}

export class WorkspaceOutOfScopeError extends IngestError {
  override name = 'WorkspaceOutOfScopeError';
  readonly status = 403;
  readonly code = 'workspace_out_of_scope';
}

/** How full the decisive window was: traces counted, room left, and what the batch asked for. */
export interface WindowUsage {
  used: number;
  remaining: number;
  requested: number;
}

export class RateLimitedError extends IngestError {
  override name = 'RateLimitedError';
  readonly status = 429;
  readonly code = 'rate_limited';
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

/** A dependency still failing after bounded retries, or an unexpected error: nothing of the batch was accepted. */
export class UnavailableError extends IngestError {
  override name = 'UnavailableError';
  readonly status = 503;
  readonly code = 'unavailable';
  override readonly retryAfterSeconds = RETRY_AFTER_UNAVAILABLE_SECONDS;
}

/**
 * The 503 for a publish whose outcome is not known for every trace: some may be stored. Resending
 * under the same Idempotency-Key gives the records the same `record_id`, so the copies land once.
 */
export class OutcomeUnknownError extends UnavailableError {
  override name = 'OutcomeUnknownError';

  override bodyFields(): Record<string, unknown> {
    return { may_have_been_accepted: true };
  }
}

/** The 503 for a failed publish: honest about whether anything of the batch may be stored. */
export function publishUnavailable(error: unknown): UnavailableError {
  if (!(error instanceof PublishIncompleteError) || error.nothingWritten) return dependencyUnavailable(error);
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

/** The function's deadline reached with the work still in flight: part of the batch may have been accepted. */
export class DeadlineReachedError extends UnavailableError {
  override name = 'DeadlineReachedError';

  override bodyFields(): Record<string, unknown> {
    return { may_have_been_accepted: true };
  }
}

export class InvalidIdempotencyKeyError extends IngestError {
  override name = 'InvalidIdempotencyKeyError';
  readonly status = 400;
  readonly code = 'invalid_idempotency_key';
}

/** The same Idempotency-Key was used with a different body. */
export class IdempotencyKeyReusedError extends IngestError {
  override name = 'IdempotencyKeyReusedError';
  readonly status = 422;
  readonly code = 'idempotency_key_reused';
}

/** A request with the same Idempotency-Key is still being processed. */
export class IdempotencyInProgressError extends IngestError {
  override name = 'IdempotencyInProgressError';
  readonly status = 409;
  readonly code = 'idempotency_in_progress';
  override readonly retryAfterSeconds = 1;
}
