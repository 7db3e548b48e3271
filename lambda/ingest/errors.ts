import type { RateWindow } from '../shared/domain/tenancy.js';

/**
 * Why a request was refused, as domain errors. `http-response.ts` is the one place that maps them
 * to statuses and bodies; `code` is the stable machine-readable code of the contract (decisions §1).
 */
export abstract class IngestError extends Error {
  abstract readonly code: string;
}

export class InvalidApiKeyError extends IngestError {
  override name = 'InvalidApiKeyError';
  readonly code = 'invalid_api_key';
}

export class NoActivePlanError extends IngestError {
  override name = 'NoActivePlanError';
  readonly code = 'no_active_plan';
}

export class PaymentRequiredError extends IngestError {
  override name = 'PaymentRequiredError';
  readonly code = 'payment_required';
}

export class PayloadTooLargeError extends IngestError {
  override name = 'PayloadTooLargeError';
  readonly code = 'payload_too_large';
}

export class MalformedBodyError extends IngestError {
  override name = 'MalformedBodyError';
  readonly code = 'malformed_body';
}

export class WorkspaceRequiredError extends IngestError {
  override name = 'WorkspaceRequiredError';
  readonly code = 'workspace_required';
}

export class WorkspaceOutOfScopeError extends IngestError {
  override name = 'WorkspaceOutOfScopeError';
  readonly code = 'workspace_out_of_scope';
}

export class RateLimitedError extends IngestError {
  override name = 'RateLimitedError';
  readonly code = 'rate_limited';
  constructor(
    message: string,
    readonly window: RateWindow,
    readonly limit: number,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

/** A dependency still failing after bounded retries; nothing of the batch was accepted. */
export class UnavailableError extends IngestError {
  override name = 'UnavailableError';
  readonly code = 'unavailable';
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The function's deadline reached with the work still in flight: part of the batch may have been accepted. */
export class DeadlineReachedError extends UnavailableError {
  override name = 'DeadlineReachedError';
}

export class InvalidIdempotencyKeyError extends IngestError {
  override name = 'InvalidIdempotencyKeyError';
  readonly code = 'invalid_idempotency_key';
}

/** The same Idempotency-Key was used with a different body. */
export class IdempotencyKeyReusedError extends IngestError {
  override name = 'IdempotencyKeyReusedError';
  readonly code = 'idempotency_key_reused';
}

/** A request with the same Idempotency-Key is still being processed. */
export class IdempotencyInProgressError extends IngestError {
  override name = 'IdempotencyInProgressError';
  readonly code = 'idempotency_in_progress';
  readonly retryAfterSeconds = 1;
}
