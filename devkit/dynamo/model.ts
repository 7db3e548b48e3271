import {
  ConditionalCheckFailedException,
  IdempotentParameterMismatchException,
  TransactionInProgressException,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  ProvisionedThroughputExceededException,
  PutItemCommand,
  TransactionCanceledException,
  TransactionConflictException,
  TransactWriteItemsCommand,
  type TransactWriteItem,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { applyUpdate, evaluateCondition, type Item } from './expressions.js';
import { type DynamoSemanticsOptions, DynamoSemantics, itemSizeBytes, type ReasonCode, type WriteTarget } from './semantics.js';
import type { VirtualClock } from './virtual-clock.js';

/**
 * An in-memory DynamoDB for the commands the rate limiter sends, on a virtual clock, with the
 * conflicts and throughput limits of `DynamoSemantics`. It answers with the SDK's own exception
 * classes, so code under test cannot tell it from the client it was written for.
 */

export interface ModelOptions {
  /** Network and service time of a call, each way summed, before any hold. Default 4 ms. */
  roundTripMs: number;
  /**
   * Chance that a call is applied but its answer is lost (the caller sees a timeout): the case a
   * `ClientRequestToken` and the reservation markers exist for. Default 0.
   */
  lostAnswerRate: number;
  semantics: Partial<DynamoSemanticsOptions>;
  random: () => number;
}

/** The error a caller sees when an answer is lost on the way back. */
export class LostAnswerError extends Error {
  override readonly name = 'TimeoutError';
}

const TOKEN_LIFETIME_MS = 10 * 60_000;

export class DynamoModel {
  readonly semantics: DynamoSemantics;
  private readonly tables = new Map<string, Map<string, Item>>();
  /** Per `ClientRequestToken`: when it was applied, its request's parameters, and when its hold ends. */
  private readonly tokens = new Map<string, { at: number; parameters: string; heldUntil: number }>();
  private readonly options: ModelOptions;
  /** Calls by outcome, for benches. */
  readonly calls = { transactions: 0, conflicts: 0, throttled: 0, conditionFailed: 0, singleWrites: 0 };

  constructor(
    private readonly clock: VirtualClock,
    options: Partial<ModelOptions> = {},
  ) {
    this.options = { roundTripMs: 4, lostAnswerRate: 0, semantics: {}, random: Math.random, ...options };
    this.semantics = new DynamoSemantics(clock.now, { random: this.options.random, ...this.options.semantics });
  }

  /** A client whose `send` answers from this model; typed as the real client for injection. */
  client(): DynamoDBClient {
    return { send: (command: unknown) => this.send(command) } as unknown as DynamoDBClient;
  }

  /** The stored item, read consistently. */
  get(table: string, key: Item): Item | undefined {
    return this.tables.get(table)?.get(keyString(key));
  }

  /** Every stored item of a table. */
  items(table: string): Item[] {
    return [...(this.tables.get(table)?.values() ?? [])];
  }

  private async send(command: unknown): Promise<unknown> {
    const half = this.options.roundTripMs / 2;
    await this.clock.sleep(half);
    const { result, holdMs } = this.apply(command);
    await this.clock.sleep(half + holdMs);
    if (this.options.lostAnswerRate > 0 && this.options.random() < this.options.lostAnswerRate) {
      throw new LostAnswerError('answer lost on the way back (model fault)');
    }
    if (result instanceof Error) throw result;
    return result;
  }

  private apply(command: unknown): { result: unknown; holdMs: number } {
    if (command instanceof TransactWriteItemsCommand) return this.transact(command.input.TransactItems ?? [], command.input.ClientRequestToken);
    if (command instanceof GetItemCommand) {
      const item = this.get(command.input.TableName ?? '', command.input.Key ?? {});
      return { result: { $metadata: {}, Item: item }, holdMs: 0 };
    }
    if (command instanceof UpdateItemCommand || command instanceof PutItemCommand || command instanceof DeleteItemCommand) {
      return { result: this.singleWrite(command), holdMs: 0 };
    }
    throw new Error(`model: unsupported command ${(command as object).constructor.name}`);
  }

  private transact(items: TransactWriteItem[], token: string | undefined): { result: unknown; holdMs: number } {
    this.calls.transactions++;
    const now = this.clock.now();
    const parameters = JSON.stringify(items);
    const seen = token === undefined ? undefined : this.tokens.get(token);
    if (seen && seen.at > now - TOKEN_LIFETIME_MS) {
      // Same token within ten minutes: DynamoDB refuses other parameters, answers "in progress" while
      // the original still runs, and otherwise success without applying again.
      if (seen.parameters !== parameters) {
        return { result: new IdempotentParameterMismatchException({ message: 'The request uses the same client token as a previous, but non-identical request.', $metadata: {} }), holdMs: 0 };
      }
      if (seen.heldUntil > now) {
        return { result: new TransactionInProgressException({ message: 'The transaction with the given request token is already in progress.', $metadata: {} }), holdMs: 0 };
      }
      return { result: { $metadata: {} }, holdMs: 0 };
    }
    const writes = items.map((entry) => this.plan(entry));
    const admission = this.semantics.admitTransaction(writes.map((w) => w.target));
    if (!admission.admitted) {
      if (admission.reasons.includes('TransactionConflict')) this.calls.conflicts++;
      else this.calls.throttled++;
      return { result: cancelled(admission.reasons), holdMs: 0 };
    }
    const failed = writes.map((w) => !w.conditionHolds);
    if (failed.some(Boolean)) {
      this.calls.conditionFailed++;
      this.semantics.releaseHold(writes.map((w) => w.target));
      return { result: cancelled(failed.map((f) => (f ? 'ConditionalCheckFailed' : 'None'))), holdMs: 0 };
    }
    for (const write of writes) write.commit();
    if (token !== undefined) this.tokens.set(token, { at: now, parameters, heldUntil: now + admission.holdMs });
    return { result: { $metadata: {} }, holdMs: admission.holdMs };
  }

  private singleWrite(command: UpdateItemCommand | PutItemCommand | DeleteItemCommand): unknown {
    this.calls.singleWrites++;
    const entry: TransactWriteItem =
      command instanceof UpdateItemCommand
        ? { Update: command.input as NonNullable<TransactWriteItem['Update']> }
        : command instanceof PutItemCommand
          ? { Put: command.input as NonNullable<TransactWriteItem['Put']> }
          : { Delete: command.input as NonNullable<TransactWriteItem['Delete']> };
    const write = this.plan(entry);
    const admission = this.semantics.admitSingleWrite(write.target);
    if (!admission.admitted) {
      return admission.error === 'TransactionConflictException'
        ? new TransactionConflictException({ message: 'Transaction is ongoing for the item', $metadata: {} })
        : new ProvisionedThroughputExceededException({ message: 'The level of configured provisioned throughput for the table was exceeded', $metadata: {} });
    }
    if (!write.conditionHolds) return new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} });
    write.commit();
    // Only ALL_NEW of the return values: what the tenancy store's revoke asks for.
    if (command instanceof UpdateItemCommand && command.input.ReturnValues === 'ALL_NEW') return { $metadata: {}, Attributes: write.after };
    if (command.input.ReturnValues !== undefined && command.input.ReturnValues !== 'NONE') throw new Error(`model: unsupported ReturnValues ${command.input.ReturnValues}`);
    return { $metadata: {} };
  }

  /** What one write would do: its capacity target, whether its condition holds, and how to apply it. */
  private plan(entry: TransactWriteItem): { target: WriteTarget; conditionHolds: boolean; after: Item | undefined; commit: () => void } {
    const op = entry.Update ?? entry.Put ?? entry.Delete ?? entry.ConditionCheck;
    if (!op?.TableName) throw new Error('model: transaction item without a table');
    const table = op.TableName;
    const key = entry.Put ? keyOf(entry.Put.Item ?? {}) : ((op as { Key?: Item }).Key ?? {});
    const existing = this.get(table, key);
    const ctx = { names: op.ExpressionAttributeNames, values: op.ExpressionAttributeValues };
    const conditionHolds = evaluateCondition(op.ConditionExpression, existing, ctx);
    let after: Item | undefined = existing;
    if (entry.Update) after = applyUpdate(entry.Update.UpdateExpression ?? '', existing ?? { ...key }, ctx);
    if (entry.Put) after = entry.Put.Item ?? {};
    if (entry.Delete) after = undefined;
    return {
      target: { table, key, sizeBytes: itemSizeBytes(after ?? existing) },
      conditionHolds,
      after,
      commit: () => {
        if (entry.ConditionCheck) return;
        let rows = this.tables.get(table);
        if (!rows) this.tables.set(table, (rows = new Map()));
        if (after === undefined) rows.delete(keyString(key));
        else rows.set(keyString(key), after);
      },
    };
  }
}

function cancelled(reasons: ReasonCode[]): TransactionCanceledException {
  return new TransactionCanceledException({
    message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.join(', ')}]`,
    $metadata: {},
    CancellationReasons: reasons.map((Code) => (Code === 'None' ? { Code } : { Code, Message: reasonMessage(Code) })),
  });
}

/** The messages DynamoDB puts next to each cancellation code. */
export function reasonMessage(code: ReasonCode): string {
  switch (code) {
    case 'TransactionConflict':
      return 'Transaction is ongoing for the item';
    case 'ThrottlingError':
      return 'Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table or index so please try again shortly.';
    case 'ConditionalCheckFailed':
      return 'The conditional request failed';
    default:
      return '';
  }
}

/** This project's tables all key on `pk` and `sk`. */
const keyOf = (item: Item): Item => (item.sk ? { pk: item.pk!, sk: item.sk } : { pk: item.pk! });
const keyString = (key: Item) => `${key.pk?.S ?? ''}\u0000${key.sk?.S ?? ''}`;
