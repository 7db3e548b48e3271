import {
  type AttributeValue,
  ProvisionedThroughputExceededException,
  TransactionCanceledException,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import { PutRecordsCommand, ProvisionedThroughputExceededException as KinesisThroughputExceeded } from '@aws-sdk/client-kinesis';
import { decodeTraceRecord, type InlineTraceRecord } from '../../../lambda/shared/domain/trace-record.js';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { createHarness, ddbMock, type Harness, type HarnessOptions, kinesisMock } from '../../support/ingest-harness.js';

/**
 * Stateful fakes behind the harness's mocked clients, so fault tests can check end states: the
 * rate-window counters as DynamoDB would hold them (conditions, ClientRequestToken idempotency)
 * and the records as the stream would hold them. Faults are queued per call and consumed in order.
 */

export type DynamoFault =
  | 'none' // answered normally
  | 'conflict' // cancelled: TransactionConflict on one item, nothing applied
  | 'throttle-reason' // cancelled: ThrottlingError on one item, nothing applied
  | 'throttle' // ProvisionedThroughputExceededException, nothing applied
  | 'timeout-before' // the request never reached DynamoDB
  | 'timeout-after'; // applied, but the response was lost

export type KinesisFault =
  | 'partial' // every other entry and the last fail with ProvisionedThroughputExceededException
  | 'throttle' // the whole call fails
  | 'timeout-before'
  | 'timeout-after' // written, but the response was lost
  | 'short-response'; // FailedRecordCount > 0 with no per-entry results

const timeout = () => Object.assign(new Error('socket timed out'), { name: 'TimeoutError', $metadata: {} });

export class RateTableFake {
  readonly counts = new Map<string, number>();
  readonly faults: DynamoFault[] = [];
  /** Tokens DynamoDB remembers for 10 minutes: a repeat with the same token is not applied again. */
  private readonly applied = new Set<string>();
  calls = 0;
  /** How long each transaction takes before it is applied and answered. */
  delayMs = 0;

  install(): this {
    ddbMock.on(TransactWriteItemsCommand).callsFake(async (input) => {
      this.calls++;
      const fault = this.faults.shift();
      if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
      const items = input.TransactItems ?? [];
      const cancel = (codes: string[]) =>
        new TransactionCanceledException({ message: 'Transaction cancelled', $metadata: {}, CancellationReasons: codes.map((Code) => ({ Code })) });
      if (fault === 'conflict') throw cancel(items.map((_: unknown, i: number) => (i === 0 ? 'TransactionConflict' : 'None')));
      if (fault === 'throttle-reason') throw cancel(items.map((_: unknown, i: number) => (i === 0 ? 'ThrottlingError' : 'None')));
      if (fault === 'throttle') throw new ProvisionedThroughputExceededException({ message: 'slow down', $metadata: {} });
      if (fault === 'timeout-before') throw timeout();
      const token = input.ClientRequestToken;
      if (token === undefined || !this.applied.has(token)) {
        this.apply(items, cancel);
        if (token !== undefined) this.applied.add(token);
      }
      if (fault === 'timeout-after') throw timeout();
      return {};
    });
    return this;
  }

  /** Count of the window whose sort key starts with `window#`, summed over organizations. */
  count(window: 'minute' | 'hour' | 'day' | 'month'): number {
    let total = 0;
    for (const [key, value] of this.counts) if (key.split('|')[1]?.startsWith(`${window}#`)) total += value;
    return total;
  }

  /** Reservation markers (`reservation#<request id>`) present in the table. */
  readonly markers = new Set<string>();

  private apply(items: TransactItem[], cancel: (codes: string[]) => Error) {
    const keyOf = (key: Record<string, AttributeValue> | undefined) => `${key?.pk?.S}|${key?.sk?.S}`;
    const reasons = items.map(({ Update, Put, Delete }) => {
      if (Put) return this.markers.has(keyOf(Put.Item)) ? 'ConditionalCheckFailed' : 'None';
      if (Delete) return this.markers.has(keyOf(Delete.Key)) ? 'None' : 'ConditionalCheckFailed';
      if (!Update?.ConditionExpression) return 'None';
      const room = Number(Update.ExpressionAttributeValues?.[':room']?.N);
      const current = this.counts.get(keyOf(Update.Key));
      return current === undefined || current <= room ? 'None' : 'ConditionalCheckFailed';
    });
    if (reasons.some((r) => r !== 'None')) throw cancel(reasons);
    for (const { Update, Put, Delete } of items) {
      if (Put) this.markers.add(keyOf(Put.Item));
      if (Delete) this.markers.delete(keyOf(Delete.Key));
      if (!Update) continue;
      const values = Update.ExpressionAttributeValues ?? {};
      const delta = Number(values[':n']?.N ?? values[':minus']?.N ?? 0);
      const key = keyOf(Update.Key);
      this.counts.set(key, (this.counts.get(key) ?? 0) + delta);
    }
  }
}

type TransactItem = {
  Update?: { Key?: Record<string, AttributeValue>; ConditionExpression?: string; ExpressionAttributeValues?: Record<string, AttributeValue> };
  Put?: { Item?: Record<string, AttributeValue> };
  Delete?: { Key?: Record<string, AttributeValue> };
};

export class StreamFake {
  readonly records: InlineTraceRecord[] = [];
  readonly faults: KinesisFault[] = [];
  calls = 0;
  /** When set, a call that writes never answers: the Lambda is frozen or killed before it can reply. */
  hangAfterWrite = false;
  /** How long each call takes before it writes and answers (or fails): a slow stream. */
  callMs = 0;

  install(): this {
    kinesisMock.on(PutRecordsCommand).callsFake(async (input) => {
      this.calls++;
      const fault = this.faults.shift();
      if (this.callMs > 0) await new Promise((resolve) => setTimeout(resolve, this.callMs));
      const entries = input.Records ?? [];
      if (fault === 'throttle') throw new KinesisThroughputExceeded({ message: 'Rate exceeded for shard', $metadata: {} });
      if (fault === 'timeout-before') throw timeout();
      const failed = (i: number) => fault === 'partial' && (i % 2 === 1 || i === entries.length - 1);
      entries.forEach((entry: { Data?: Uint8Array }, i: number) => {
        if (!failed(i)) this.records.push(decodeTraceRecord(entry.Data as Uint8Array) as InlineTraceRecord);
      });
      if (fault === 'timeout-after') throw timeout();
      if (this.hangAfterWrite) return new Promise(() => undefined);
      if (fault === 'short-response') return { FailedRecordCount: 1, Records: [] };
      return {
        FailedRecordCount: entries.filter((_: unknown, i: number) => failed(i)).length,
        Records: entries.map((_: unknown, i: number) =>
          failed(i)
            ? { ErrorCode: 'ProvisionedThroughputExceededException', ErrorMessage: 'Rate exceeded for shard' }
            : { SequenceNumber: String(this.records.length + i), ShardId: 'shardId-000000000000' },
        ),
      };
    });
    return this;
  }

  traceIds(): string[] {
    return this.records.map((r) => r.trace.trace_id);
  }
}

export type Batch = { traces: Record<string, unknown>[] };
export const bodyOf = (response: APIGatewayProxyResult) => JSON.parse(response.body) as Record<string, unknown>;
export const traceIdsOf = (batch: Batch) => batch.traces.map((t) => String(t.trace_id));

/** The answer a fault must get: 503, Retry-After, and a detail telling the client to resend the whole batch. */
export function expectRetryable(response: APIGatewayProxyResult): void {
  expect(response.statusCode).toBe(503);
  expect(Number(response.headers?.['Retry-After'])).toBeGreaterThan(0);
  expect(bodyOf(response)).toMatchObject({ code: 'unavailable', detail: expect.stringMatching(/^Service temporarily unavailable.*retry the whole batch/) });
}

/** What every fault test starts from: a fresh harness with the fake rate table and stream installed. */
export async function freshFaultSetup(options?: HarnessOptions): Promise<{ h: Harness; rate: RateTableFake; stream: StreamFake }> {
  const h = await createHarness(options);
  return { h, rate: new RateTableFake().install(), stream: new StreamFake().install() };
}
