import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AttributeValue, TransactWriteItem } from '@aws-sdk/client-dynamodb';
import type { Engine } from '../engines/engines.js';
import { reasonMessage } from './model.js';
import { type DynamoSemanticsOptions, DynamoSemantics, itemSizeBytes, type WriteTarget } from './semantics.js';

/**
 * An HTTP proxy in front of DynamoDB Local that adds what DynamoDB Local lacks (see
 * `DynamoSemantics`): a `TransactWriteItems` holds its items for the configured time (the proxy
 * answers it when the hold ends), a write that meets a held item is refused the way DynamoDB
 * refuses it, and writes beyond 1,000 WCU/s per item or partition are throttled. Everything else
 * passes through untouched. Errors are DynamoDB's JSON error bodies, so the AWS SDK raises its
 * own `TransactionCanceledException`, `TransactionConflictException` and
 * `ProvisionedThroughputExceededException`.
 */

const ERROR_PREFIX = 'com.amazonaws.dynamodb.v20120810#';
const SINGLE_WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem']);

export interface DynamoProxy extends Engine {
  readonly semantics: DynamoSemantics;
}

/** Faults the proxy adds on request, for tests of what a client does when DynamoDB is slow. */
export interface DynamoProxyFaults {
  /**
   * Milliseconds to hold DynamoDB's answer to this request after DynamoDB Local has carried it out
   * (0 for none): the write is done, the client hears of it late, as after a network stall.
   */
  answerDelayMs?(operation: string, input: Record<string, unknown>): number;
}

/** Starts the proxy on a free loopback port, forwarding to `upstream` (DynamoDB Local's endpoint). */
export async function startDynamoProxy(upstream: string, options: Partial<DynamoSemanticsOptions> = {}, faults: DynamoProxyFaults = {}): Promise<DynamoProxy> {
  const semantics = new DynamoSemantics(Date.now, options);
  const target = new URL(upstream);
  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendError(res, 500, 'InternalServerError', (error as Error).message);
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const body = await readBody(req);
    const operation = String(req.headers['x-amz-target'] ?? '').split('.')[1] ?? '';
    let holdMs = 0;
    let heldTargets: WriteTarget[] = [];
    if (operation === 'TransactWriteItems') {
      const input = JSON.parse(body.toString('utf8')) as { TransactItems?: TransactWriteItem[] };
      heldTargets = (input.TransactItems ?? []).map(targetOf);
      const admission = semantics.admitTransaction(heldTargets);
      if (!admission.admitted) {
        return sendJson(res, 400, {
          __type: `${ERROR_PREFIX}TransactionCanceledException`,
          Message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${admission.reasons.join(', ')}]`,
          CancellationReasons: admission.reasons.map((Code) => (Code === 'None' ? { Code } : { Code, Message: reasonMessage(Code) })),
        });
      }
      holdMs = admission.holdMs;
    } else if (SINGLE_WRITES.has(operation)) {
      const input = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
      const admission = semantics.admitSingleWrite(targetOf({ [operation === 'PutItem' ? 'Put' : operation === 'UpdateItem' ? 'Update' : 'Delete']: input }));
      if (!admission.admitted) {
        const message =
          admission.error === 'TransactionConflictException'
            ? 'Transaction is ongoing for the item'
            : 'The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.';
        return sendError(res, 400, admission.error, message);
      }
    }
    const started = Date.now();
    const upstreamAnswer = await forward(target, req, body);
    if (heldTargets.length > 0 && upstreamAnswer.status !== 200) {
      // Cancelled by DynamoDB Local itself (a condition failed): DynamoDB lets go of the items then.
      semantics.releaseHold(heldTargets);
      holdMs = 0;
    }
    if (faults.answerDelayMs) holdMs = Math.max(holdMs, faults.answerDelayMs(operation, JSON.parse(body.toString('utf8')) as Record<string, unknown>));
    const wait = holdMs - (Date.now() - started);
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    res.writeHead(upstreamAnswer.status, upstreamAnswer.headers);
    res.end(upstreamAnswer.body);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  let stopped: Promise<void> | undefined;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    semantics,
    stop: () =>
      (stopped ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}

/** The item a write touches; its size is what the request carries (DynamoDB charges the larger of before/after). */
function targetOf(entry: TransactWriteItem): WriteTarget {
  const op = (entry.Put ?? entry.Update ?? entry.Delete ?? entry.ConditionCheck) as
    | { TableName?: string; Key?: Record<string, AttributeValue>; Item?: Record<string, AttributeValue>; ExpressionAttributeValues?: Record<string, AttributeValue> }
    | undefined;
  const item = op?.Item;
  const key = op?.Key ?? (item ? { pk: item.pk!, ...(item.sk ? { sk: item.sk } : {}) } : {});
  const sizeBytes = item ? itemSizeBytes(item) : itemSizeBytes(key) + itemSizeBytes(op?.ExpressionAttributeValues);
  return { table: op?.TableName ?? '', key, sizeBytes };
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function forward(target: URL, req: IncomingMessage, body: Buffer): Promise<{ status: number; headers: Record<string, string | string[]>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const headers = { ...req.headers, host: target.host };
    const upstream = httpRequest(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, headers },
      (answer) => {
        void readBody(answer).then((data) => {
          const passed: Record<string, string | string[]> = {};
          for (const [name, value] of Object.entries(answer.headers)) if (value !== undefined && name !== 'connection') passed[name] = value;
          resolve({ status: answer.statusCode ?? 502, headers: passed, body: data });
        }, reject);
      },
    );
    upstream.on('error', reject);
    upstream.end(body);
  });
}

function sendJson(res: ServerResponse, status: number, payload: unknown) {
  const data = Buffer.from(JSON.stringify(payload));
  res.writeHead(status, { 'content-type': 'application/x-amz-json-1.0', 'content-length': String(data.length), 'x-amzn-requestid': 'proxy' });
  res.end(data);
}

function sendError(res: ServerResponse, status: number, code: string, message: string) {
  sendJson(res, status, { __type: `${ERROR_PREFIX}${code}`, message });
}
