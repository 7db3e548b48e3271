import { gunzipSync, gzipSync } from 'node:zlib';
import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import type { IdempotencyClaim, IdempotencyStore } from '../../core/idempotency/ports.js';
import { DependencyUnavailableError } from '../../../shared/domain/errors.js';
import { rateKeys } from '../../../shared/tables.js';

/** How long a request is remembered (issue: 24 hours). */
export const IDEMPOTENCY_RETENTION_SECONDS = 24 * 60 * 60;
/** How long an unfinished claim blocks duplicates: longer than the function's timeout. */
export const IDEMPOTENCY_LOCK_SECONDS = 120;
/** Room left under DynamoDB's 400 KB item limit for the stored (gzip) response. */
const MAX_STORED_RESPONSE_BYTES = 350_000;

/**
 * Idempotency records in the rate table (`IDEM#<org>` / key), expiring by TTL after 24 hours.
 * The expiry is also checked on read, since TTL deletion can lag by days.
 */
export class DynamoDbIdempotencyStore implements IdempotencyStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
    /** The largest gzip of a response stored; a test sets its own, to hold the bound at its edge. */
    private readonly maxStoredResponseBytes = MAX_STORED_RESPONSE_BYTES,
  ) {}

  private key(orgId: string, key: string) {
    const { pk, sk } = rateKeys.idempotency(orgId, key);
    return { pk: { S: pk }, sk: { S: sk } };
  }

  async claim(orgId: string, key: string, bodyHash: string, nowSeconds: number, claimToken: string): Promise<IdempotencyClaim> {
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: {
            ...this.key(orgId, key),
            state: { S: 'in_progress' },
            body_hash: { S: bodyHash },
            claim_token: { S: claimToken },
            lock_expires_at: { N: String(nowSeconds + IDEMPOTENCY_LOCK_SECONDS) },
            expires_at: { N: String(nowSeconds + IDEMPOTENCY_RETENTION_SECONDS) },
          },
          // Free when absent, expired, or abandoned by a request that died holding it; or already ours: the
          // SDK retries a PutItem whose answer timed out (2 s), and the first attempt may have been written.
          ConditionExpression:
            'attribute_not_exists(pk) OR expires_at < :now OR (#state = :progress AND (lock_expires_at < :now OR claim_token = :token))',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: { ':now': { N: String(nowSeconds) }, ':progress': { S: 'in_progress' }, ':token': { S: claimToken } },
        }),
      );
      return { kind: 'claimed' };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) {
        throw new DependencyUnavailableError('dynamodb', 'idempotency claim failed', { cause: error });
      }
    }
    const { Item } = await this.client
      .send(new GetItemCommand({ TableName: this.tableName, Key: this.key(orgId, key), ConsistentRead: true }))
      .catch((error: unknown) => {
        throw new DependencyUnavailableError('dynamodb', 'idempotency read failed', { cause: error });
      });
    // Released (or expired) between the two calls: there is no hash to compare, and the key is free again.
    const hash = Item?.body_hash?.S;
    if (!Item || hash === undefined || Number(Item.expires_at?.N ?? Infinity) < nowSeconds) return { kind: 'vanished' };
    const stored = Item.response?.B;
    if (Item.state?.S === 'completed' && stored) {
      return { kind: 'completed', bodyHash: hash, response: gunzipSync(stored).toString('utf8') };
    }
    return { kind: 'in_progress', bodyHash: hash };
  }

  async complete(orgId: string, key: string, response: string, nowSeconds: number, claimToken: string): Promise<boolean> {
    const compressed = gzipSync(response);
    if (compressed.byteLength > this.maxStoredResponseBytes) return false;
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: this.key(orgId, key),
          UpdateExpression: 'SET #state = :completed, #response = :response, expires_at = :expires REMOVE lock_expires_at',
          // Still our claim: after the lock time another request may have taken the key.
          ConditionExpression: 'claim_token = :token',
          ExpressionAttributeNames: { '#state': 'state', '#response': 'response' },
          ExpressionAttributeValues: {
            ':completed': { S: 'completed' },
            ':response': { B: compressed },
            ':expires': { N: String(nowSeconds + IDEMPOTENCY_RETENTION_SECONDS) },
            ':token': { S: claimToken },
          },
        }),
      );
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
    return true;
  }

  async release(orgId: string, key: string, claimToken: string): Promise<void> {
    await this.client.send(
      new DeleteItemCommand({
        TableName: this.tableName,
        Key: this.key(orgId, key),
        ConditionExpression: '#state = :progress AND claim_token = :token',
        ExpressionAttributeNames: { '#state': 'state' },
        ExpressionAttributeValues: { ':progress': { S: 'in_progress' }, ':token': { S: claimToken } },
      }),
    ).catch((error: unknown) => {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    });
  }
}
