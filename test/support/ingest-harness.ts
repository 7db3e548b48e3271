import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { type AttributeValue, DynamoDBClient, GetItemCommand, PutItemCommand, TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import { KinesisClient, PutRecordsCommand } from '@aws-sdk/client-kinesis';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { composeIngest } from '../../lambda/ingest/compose.js';
import type { IdempotencyStore } from '../../lambda/ingest/core/idempotency/ports.js';
import { DynamoDbTenancyStore } from '../../lambda/tenancy-store/dynamodb-tenancy-store.js';
import { decodeTraceRecord, type InlineTraceRecord } from '../../lambda/shared/domain/trace-record.js';
import { generateApiKeySecret, type Organization, type Quotas } from '../../lambda/shared/domain/tenancy.js';
import { lambdaContext, NOW_MICROS } from '../../devkit/builders/trace-builders.js';

export const ddbMock = mockClient(DynamoDBClient);
export const kinesisMock = mockClient(KinesisClient);
export const s3Mock = mockClient(S3Client);

const noSleep = async () => undefined;

/** Every record the handler published to the mocked stream, decoded, in order. */
export function publishedRecords(): InlineTraceRecord[] {
  return kinesisMock
    .commandCalls(PutRecordsCommand)
    .flatMap((call) => call.args[0].input.Records ?? [])
    .map((entry) => decodeTraceRecord(entry.Data as Uint8Array) as InlineTraceRecord);
}
export const TEST_POLICY = { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 2 };

export interface HarnessOptions {
  /** The organization's overrides; without `plan`, every window not given here gets the harness's own number. */
  quotas?: Partial<Quotas>;
  /** Puts the organization on plan `team` with these quotas (`missing`: a plan that does not exist), overriding only `quotas`. */
  plan?: Quotas | 'missing';
  planStatus?: Organization['planStatus'];
  billingStatus?: Organization['billingStatus'];
  workspaces?: string[];
  /** Honours Idempotency-Key with this store (off by default). */
  idempotency?: IdempotencyStore;
}

export interface Harness {
  invoke(event: APIGatewayProxyEvent, context?: typeof lambdaContext): Promise<APIGatewayProxyResult>;
  orgId: string;
  orgKey: string;
  workspaceKey: string;
  revokedKey: string;
  /** Items in the fake tenancy table, by `pk|sk`. */
  items: Map<string, Record<string, AttributeValue>>;
}

/**
 * The real handler chain and adapters over mocked AWS clients. The tenancy table is a map served
 * by GetItem/PutItem fakes and seeded through the real tenancy adapter, so item shapes stay true.
 */
export async function createHarness(options: HarnessOptions = {}): Promise<Harness> {
  ddbMock.reset();
  kinesisMock.reset();
  s3Mock.reset();
  const items = new Map<string, Record<string, AttributeValue>>();
  const keyOf = (key: Record<string, AttributeValue> | undefined) => `${key?.pk?.S}|${key?.sk?.S}`;
  ddbMock.on(GetItemCommand).callsFake((input) => ({ Item: items.get(keyOf(input.Key)) }));
  ddbMock.on(PutItemCommand).callsFake((input) => {
    items.set(keyOf(input.Item), input.Item);
    return {};
  });
  ddbMock.on(TransactWriteItemsCommand).resolves({});
  kinesisMock.on(PutRecordsCommand).callsFake((input) => ({
    FailedRecordCount: 0,
    Records: (input.Records ?? []).map((_: unknown, i: number) => ({ SequenceNumber: String(i), ShardId: 'shardId-000000000000' })),
  }));
  s3Mock.on(PutObjectCommand).resolves({});

  const dynamodb = new DynamoDBClient({ region: 'us-east-1' });
  const store = new DynamoDbTenancyStore(dynamodb, 'tenancy');
  const orgId = 'acme';
  const now = new Date(NOW_MICROS / 1000).toISOString();
  await store.putOrganization(
    {
      orgId,
      plan: 'team',
      planStatus: options.planStatus ?? 'active',
      billingStatus: options.billingStatus ?? 'ok',
      overrides: options.plan === undefined ? { minute: 1000, hour: 10_000, day: 100_000, month: 1_000_000, ...options.quotas } : { ...options.quotas },
      createdAt: now,
      updatedAt: now,
    },
    { createOnly: true },
  );
  if (options.plan !== undefined && options.plan !== 'missing') await store.putPlan({ name: 'team', quotas: options.plan, createdAt: now, updatedAt: now }, 'create');
  for (const slug of options.workspaces ?? ['research', 'support']) await store.putWorkspace({ orgId, slug, createdAt: now });
  const orgKey = generateApiKeySecret();
  const workspaceKey = generateApiKeySecret();
  const revokedKey = generateApiKeySecret();
  const base = { orgId, name: 'test', createdAt: now };
  await store.putApiKey({ ...base, keyId: orgKey.keyId, workspaceSlug: null, status: 'active', displayPrefix: orgKey.displayPrefix }, orgKey.secretHash);
  await store.putApiKey(
    { ...base, keyId: workspaceKey.keyId, workspaceSlug: 'research', status: 'active', displayPrefix: workspaceKey.displayPrefix },
    workspaceKey.secretHash,
  );
  await store.putApiKey(
    { ...base, keyId: revokedKey.keyId, workspaceSlug: null, status: 'revoked', displayPrefix: revokedKey.displayPrefix },
    revokedKey.secretHash,
  );
  ddbMock.resetHistory();

  const handler = composeIngest({
    resources: { tenancyTable: 'tenancy', rateTable: 'rate', traceStream: 'traces', dataBucket: 'data-bucket' },
    clients: { dynamodb, kinesis: new KinesisClient({ region: 'us-east-1' }), s3: new S3Client({ region: 'us-east-1' }) },
    idempotency: options.idempotency !== undefined,
    ...(options.idempotency ? { ports: { idempotency: options.idempotency } } : {}),
    retries: { rateWindows: TEST_POLICY, publish: TEST_POLICY, sleep: noSleep },
    logger: new Logger({ serviceName: 'test', logLevel: 'SILENT' }),
    metrics: new Metrics({ namespace: 'Test', serviceName: 'test' }),
    nowMicros: () => NOW_MICROS,
  });
  return {
    invoke: (event, context = lambdaContext) => handler(event, context) as Promise<APIGatewayProxyResult>,
    orgId,
    orgKey: orgKey.secret,
    workspaceKey: workspaceKey.secret,
    revokedKey: revokedKey.secret,
    items,
  };
}
