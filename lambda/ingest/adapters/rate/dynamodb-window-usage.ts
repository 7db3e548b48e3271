import { type AttributeValue, BatchGetItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { WindowCounter } from '../../../shared/domain/rate-windows.js';
import type { WindowCounts, WindowUsageReader } from '../../core/rate/ports.js';
import { rateKeys } from '../../../shared/tables.js';

/** Unprocessed keys are asked for again this many times before the read gives up on them. */
const ATTEMPTS = 3;

/**
 * Reads an organization's window counters with one `BatchGetItem`. Eventually consistent for the
 * ingest path (half the read cost; a counter may lag a write by up to about a second), strongly
 * consistent for `admin org usage`.
 */
export class DynamoDbWindowUsage implements WindowUsageReader {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
    private readonly consistentRead = false,
  ) {}

  async read(orgId: string, counters: readonly WindowCounter[]): Promise<WindowCounts> {
    const counts: WindowCounts = {};
    if (counters.length === 0) return counts;
    const windowOfKey = new Map<string, WindowCounter['window']>();
    let keys: Record<string, AttributeValue>[] = counters.map((counter) => {
      const { pk, sk } = rateKeys.window(orgId, counter.window, counter.windowStart);
      windowOfKey.set(sk, counter.window);
      counts[counter.window] = 0;
      return { pk: { S: pk }, sk: { S: sk } };
    });
    for (let attempt = 0; attempt < ATTEMPTS && keys.length > 0; attempt++) {
      const { Responses, UnprocessedKeys } = await this.client.send(
        new BatchGetItemCommand({
          RequestItems: { [this.tableName]: { Keys: keys, ConsistentRead: this.consistentRead, ProjectionExpression: 'sk, #count', ExpressionAttributeNames: { '#count': 'count' } } },
        }),
      );
      for (const item of Responses?.[this.tableName] ?? []) {
        const window = windowOfKey.get(item.sk?.S ?? '');
        if (window) counts[window] = Number(item.count?.N ?? 0);
      }
      keys = UnprocessedKeys?.[this.tableName]?.Keys ?? [];
    }
    if (keys.length > 0) throw new Error('rate-window counters not read: DynamoDB left keys unprocessed');
    return counts;
  }
}
