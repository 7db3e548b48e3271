import { randomBytes } from 'node:crypto';
import { ConditionalCheckFailedException, type DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { tenancyKeys } from '../shared/tables.js';
import type { ErasureSecret } from './stored-erasures.js';

/**
 * Adapter: the deployed stack's erasure secret, one item of the tenancy table (which already holds the API key
 * hashes, apart from the data bucket that holds the keyed hashes). The first function that needs it writes 32
 * random bytes with a conditional put; a function that loses that race reads the winner's. Read strongly
 * consistent, then kept for the container's life.
 */
export class DynamoDbErasureSecret implements ErasureSecret {
  private cached: Promise<Uint8Array> | undefined;

  constructor(
    private readonly client: DynamoDBClient,
    private readonly table: string,
    private readonly generate: () => Uint8Array = () => randomBytes(32),
  ) {}

  get(): Promise<Uint8Array> {
    this.cached ??= this.load().catch((error: unknown) => {
      this.cached = undefined;
      throw error;
    });
    return this.cached;
  }

  private async read(): Promise<Uint8Array | undefined> {
    const { Item } = await this.client.send(new GetItemCommand({ TableName: this.table, Key: { pk: { S: tenancyKeys.erasureSecret().pk }, sk: { S: tenancyKeys.erasureSecret().sk } }, ConsistentRead: true }));
    return Item?.secret?.B;
  }

  private async load(): Promise<Uint8Array> {
    const stored = await this.read();
    if (stored) return stored;
    const key = tenancyKeys.erasureSecret();
    try {
      await this.client.send(new PutItemCommand({ TableName: this.table, Item: { pk: { S: key.pk }, sk: { S: key.sk }, secret: { B: this.generate() } }, ConditionExpression: 'attribute_not_exists(pk)' }));
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException) && (error as { name?: string }).name !== 'ConditionalCheckFailedException') throw error;
    }
    const secret = await this.read();
    if (!secret) throw new Error('the erasure secret could not be read back after it was written');
    return secret;
  }
}
