import { createHash } from 'node:crypto';
import {
  type CancellationReason,
  type DynamoDBClient,
  TransactionCanceledException,
  TransactWriteItemsCommand,
  type TransactWriteItem,
} from '@aws-sdk/client-dynamodb';
import { DependencyUnavailableError } from '../../../shared/domain/errors.js';
import type { WindowCounter } from '../../../shared/domain/rate-windows.js';
import { type RateDecision, WindowContentionError, type WindowReservations } from '../../core/rate/ports.js';
import { type BackoffPolicy, type Sleep, sleep as realSleep } from '../../../shared/runtime/backoff.js';
import { retryWithBackoff } from '../../../shared/runtime/retry.js';
import { rateKeys } from '../../../shared/tables.js';

export const DEFAULT_RATE_BACKOFF: BackoffPolicy = { maxAttempts: 5, baseDelayMs: 25, maxDelayMs: 400 };

const RETRYABLE_REASONS = new Set(['TransactionConflict', 'ThrottlingError', 'ProvisionedThroughputExceeded', 'RequestLimitExceeded']);
/**
 * A cancellation for these reasons means other writers or throttling turned the transaction back: given up on,
 * it is a `WindowContentionError`. Codes: https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html
 */
const CONTENTION_REASONS = new Set(['TransactionConflict', 'ThrottlingError']);

const isContention = (error: unknown): boolean =>
  error instanceof TransactionCanceledException && (error.CancellationReasons ?? []).some((r) => r.Code !== undefined && CONTENTION_REASONS.has(r.Code));

/** The count a window item held when its condition failed, if DynamoDB returned it. */
function usedCount(reason: CancellationReason | undefined): number | undefined {
  const count = reason?.Item?.count?.N;
  return count === undefined ? undefined : Number(count);
}

/** Tokens make a retried transaction idempotent for 10 minutes: a lost response cannot count twice. */
function requestToken(requestId: string, purpose: string, generation: number): string {
  return createHash('sha256').update(`${requestId}:${purpose}:${generation}`).digest('base64url').slice(0, 36);
}

/**
 * Four fixed windows as four items with the window start in the key, incremented in one
 * `TransactWriteItems`: each update is conditional on the count staying within its quota, so a
 * batch is counted in all windows or in none. The same transaction writes a reservation marker
 * for the request, which makes a retried reserve and a give-back exact.
 */
export class DynamoDbRateLimiter implements WindowReservations {
  /** Per organization: transactions of this instance cancelled for a conflict or throttling (the org is hot). */
  private readonly contention = new Map<string, number>();

  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
    private readonly policy: BackoffPolicy = DEFAULT_RATE_BACKOFF,
    private readonly sleep: Sleep = realSleep,
    /** Delay before retry number `retry`; injected by the model bench for repeatable jitter (else the policy's backoff). */
    private readonly retryDelay?: (retry: number) => number,
    /** Keeps the idempotency tokens of a derived limiter (`withAttempts`) apart from this one's. */
    private readonly tokenScope = '',
  ) {}

  async reserve(orgId: string, counters: readonly WindowCounter[], count: number, requestId: string): Promise<RateDecision> {
    if (counters.length === 0 || count === 0) return { allowed: true };
    const items = counters.map((counter): TransactWriteItem => ({
      Update: {
        TableName: this.tableName,
        Key: this.key(orgId, counter),
        UpdateExpression: 'ADD #count :n SET #expires = if_not_exists(#expires, :expires)',
        ConditionExpression: 'attribute_not_exists(#count) OR #count <= :room',
        // A full window's count comes back with the cancellation, so the 429 can say what is used.
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        ExpressionAttributeNames: { '#count': 'count', '#expires': 'expires_at' },
        ExpressionAttributeValues: {
          ':n': { N: String(count) },
          ':room': { N: String(counter.quota - count) },
          ':expires': { N: String(counter.expiresAt) },
        },
      },
    }));
    items.push({
      Put: {
        TableName: this.tableName,
        Item: {
          ...this.reservationKey(orgId, requestId),
          count: { N: String(count) },
          expires_at: { N: String(Math.min(...counters.map((c) => c.expiresAt))) },
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    });
    const markerIndex = counters.length;
    const outcome = await this.transact(orgId, items, requestId, 'reserve', (reasons, cancellation) => {
      // The marker exists: an earlier attempt of this request was applied and only its answer was lost.
      if (reasons[markerIndex] === 'ConditionalCheckFailed') return 'applied' as const;
      const overflowing = counters
        .map((counter, i) => ({ ...counter, used: usedCount(cancellation[i]) }))
        .filter((_, i) => reasons[i] === 'ConditionalCheckFailed');
      return overflowing.length > 0 ? overflowing : undefined;
    });
    return outcome === undefined || outcome === 'applied' ? { allowed: true } : { allowed: false, overflowing: outcome };
  }

  async release(orgId: string, counters: readonly WindowCounter[], count: number, requestId: string): Promise<void> {
    if (counters.length === 0 || count === 0) return;
    const items: TransactWriteItem[] = [
      // Only a reservation that was applied is given back, and only once.
      { Delete: { TableName: this.tableName, Key: this.reservationKey(orgId, requestId), ConditionExpression: 'attribute_exists(pk)' } },
      ...this.decrements(orgId, counters, count),
    ];
    await this.transact(orgId, items, requestId, 'release', (reasons) => (reasons[0] === 'ConditionalCheckFailed' ? 'nothing-reserved' : undefined));
  }

  /**
   * Subtracts `count` from every window once per `giveBackId`, with no reservation to delete: for
   * quota admitted from a lease (no per-request marker) whose lease was already closed. A marker
   * written in the same transaction makes a retried or repeated give-back a no-op.
   */
  async giveBack(orgId: string, counters: readonly WindowCounter[], count: number, giveBackId: string): Promise<void> {
    if (counters.length === 0 || count === 0) return;
    const items: TransactWriteItem[] = [
      {
        Put: {
          TableName: this.tableName,
          Item: {
            ...this.reservationKey(orgId, `giveback-${giveBackId}`),
            count: { N: String(-count) },
            expires_at: { N: String(Math.min(...counters.map((c) => c.expiresAt))) },
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
      ...this.decrements(orgId, counters, count),
    ];
    await this.transact(orgId, items, giveBackId, 'give-back', (reasons) => (reasons[0] === 'ConditionalCheckFailed' ? 'already-given' : undefined));
  }

  /** One update per window taking `count` off its counter: the shared half of a release and a give-back. */
  private decrements(orgId: string, counters: readonly WindowCounter[], count: number): TransactWriteItem[] {
    return counters.map((counter) => ({
      Update: {
        TableName: this.tableName,
        Key: this.key(orgId, counter),
        UpdateExpression: 'ADD #count :minus',
        ExpressionAttributeNames: { '#count': 'count' },
        ExpressionAttributeValues: { ':minus': { N: String(-count) } },
      },
    }));
  }

  /** The same limiter with at most `maxAttempts` attempts per transaction and its own token scope. */
  withAttempts(maxAttempts: number, tokenScope: string): DynamoDbRateLimiter {
    return new DynamoDbRateLimiter(this.client, this.tableName, { ...this.policy, maxAttempts }, this.sleep, this.retryDelay, tokenScope);
  }

  /** How many of this instance's transactions for `orgId` were cancelled for a conflict or throttling. */
  contentionCount(orgId: string): number {
    return this.contention.get(orgId) ?? 0;
  }

  private reservationKey(orgId: string, requestId: string) {
    const { pk, sk } = rateKeys.reservation(orgId, requestId);
    return { pk: { S: pk }, sk: { S: sk } };
  }

  private key(orgId: string, counter: WindowCounter) {
    const { pk, sk } = rateKeys.window(orgId, counter.window, counter.windowStart);
    return { pk: { S: pk }, sk: { S: sk } };
  }

  /**
   * Runs the transaction with bounded retries. `final` inspects the cancellation reasons per item
   * and returns a result that ends the attempt (a quota verdict) or `undefined` to treat the
   * cancellation as transient. The token changes only after a definite cancellation; an unknown
   * outcome (timeout, 5xx) is retried with the same token so it cannot apply twice.
   */
  private async transact<T>(
    orgId: string,
    items: TransactWriteItem[],
    requestId: string,
    purpose: string,
    final: (reasons: (string | undefined)[], cancellation: CancellationReason[]) => T | undefined,
  ): Promise<T | undefined> {
    let generation = 0;
    const giveUp = (lastError: unknown) => {
      const message = `rate-window transaction (${purpose}) failed after retries`;
      return isContention(lastError)
        ? new WindowContentionError('dynamodb', message, { cause: lastError })
        : new DependencyUnavailableError('dynamodb', message, { cause: lastError });
    };
    return retryWithBackoff({ policy: this.policy, sleep: this.sleep, delay: this.retryDelay, giveUp }, async () => {
      try {
        await this.client.send(
          new TransactWriteItemsCommand({ TransactItems: items, ClientRequestToken: requestToken(requestId, `${this.tokenScope}${purpose}`, generation) }),
        );
        return { done: undefined };
      } catch (error) {
        if (!(error instanceof TransactionCanceledException)) return { failed: error, retryable: true };
        const reasons = (error.CancellationReasons ?? []).map((reason) => reason.Code);
        const verdict = final(reasons, error.CancellationReasons ?? []);
        if (verdict !== undefined) return { done: verdict };
        const contended = reasons.some((code) => code !== undefined && RETRYABLE_REASONS.has(code));
        const transient = contended || !reasons.some((c) => c && c !== 'None');
        if (contended) {
          // Cancelled for a conflict or throttling: other writers are on this organization's items.
          this.contention.set(orgId, (this.contention.get(orgId) ?? 0) + 1);
        }
        generation++;
        return { failed: error, retryable: transient };
      }
    });
  }
}
