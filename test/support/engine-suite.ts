import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import type { LandingRecord } from '../../lambda/landing/landing-types.js';
import { DynamoDbTenancyStore } from '../../lambda/tenancy-store/dynamodb-tenancy-store.js';
import { type Engine, startDynamoDbLocal, startKinesalite, startS3rver } from '../../devkit/engines/engines.js';
import { createBucket, createStream, createTables, localClientConfig } from '../../devkit/engines/provision.js';
import { readStream } from '../../devkit/engines/engine-fixtures.js';

/** What an integration suite runs on; each engine starts only when asked for. */
export interface EngineNeeds {
  /** DynamoDB Local, with these tenancy and rate tables. */
  tables?: { tenancy: string; rate: string };
  /** kinesalite, with this stream (or, with `name: null`, the engine alone). */
  stream?: { name: string | null; shards?: number };
  /** s3rver, with this bucket. */
  bucket?: string;
  /** An in-memory DuckDB to read Parquet back with `query`. */
  duckdb?: boolean;
}

type DuckConnection = Awaited<ReturnType<Awaited<ReturnType<typeof DuckDBInstance.create>>['connect']>>;

/** The engines of one suite, their clients, and what the suites do with them. */
export interface EngineSuite {
  readonly dynamodb: DynamoDBClient;
  readonly kinesis: KinesisClient;
  readonly s3: S3Client;
  /** The tenancy adapter over the suite's tenancy table. */
  readonly tenancy: DynamoDbTenancyStore;
  readonly endpoints: { dynamodb?: string; kinesis?: string; s3?: string };
  /** A directory of the suite's own, removed after it. */
  readonly scratch: string;
  /** Where s3rver keeps the bucket's objects (`<dir>/<bucket>/<key>._S3rver_object`), as `npm run query` reads them. */
  readonly s3Directory: string;
  /** Everything on the stream, per shard, as the event source mapping would deliver it. */
  readShards(): Promise<LandingRecord[][]>;
  /** Downloads every object of the bucket into a fresh directory under `scratch`, keeping the keys as paths. */
  downloadBucket(): Promise<{ dir: string; keys: string[] }>;
  /** Runs SQL in DuckDB and returns the rows as plain objects. */
  query(sql: string): Promise<Record<string, unknown>[]>;
}

/**
 * Starts the engines a `describe` block needs before its tests (DynamoDB Local, kinesalite, s3rver,
 * each with what it should hold) and stops them, their clients and the scratch directory after,
 * also when one engine failed to start. The returned suite is usable inside tests and hooks.
 */
export function useEngineSuite(needs: EngineNeeds): EngineSuite {
  const engines: Engine[] = [];
  const clients: { destroy(): void }[] = [];
  const scratch = mkdtempSync(path.join(tmpdir(), 'engine-suite-'));
  const endpoints: EngineSuite['endpoints'] = {};
  const s3Directory = path.join(scratch, 's3rver');
  let dynamodb: DynamoDBClient | undefined;
  let kinesis: KinesisClient | undefined;
  let s3: S3Client | undefined;
  let duck: DuckConnection | undefined;
  const started = <T>(client: T | undefined, what: string): T => {
    if (client === undefined) throw new Error(`useEngineSuite: ${what} was not asked for, or has not started yet`);
    return client;
  };

  beforeAll(async () => {
    const starts = await Promise.allSettled([
      needs.tables ? startDynamoDbLocal() : undefined,
      needs.stream ? startKinesalite() : undefined,
      needs.bucket !== undefined ? startS3rver({ dataDir: s3Directory }) : undefined,
    ]);
    for (const start of starts) if (start.status === 'fulfilled' && start.value) engines.push(start.value);
    const failed = starts.find((start) => start.status === 'rejected');
    if (failed) throw failed.reason;
    const [dynamoEngine, kinesisEngine, s3Engine] = starts.map((start) => (start.status === 'fulfilled' ? start.value : undefined));
    const provisioning: Promise<void>[] = [];
    if (dynamoEngine && needs.tables) {
      endpoints.dynamodb = dynamoEngine.endpoint;
      dynamodb = new DynamoDBClient(localClientConfig(dynamoEngine.endpoint));
      clients.push(dynamodb);
      provisioning.push(createTables(dynamodb, needs.tables));
    }
    if (kinesisEngine && needs.stream) {
      endpoints.kinesis = kinesisEngine.endpoint;
      kinesis = new KinesisClient(localClientConfig(kinesisEngine.endpoint));
      clients.push(kinesis);
      if (needs.stream.name !== null) provisioning.push(createStream(kinesis, needs.stream.name, needs.stream.shards ?? 1));
    }
    if (s3Engine && needs.bucket !== undefined) {
      endpoints.s3 = s3Engine.endpoint;
      s3 = new S3Client(localClientConfig(s3Engine.endpoint));
      clients.push(s3);
      provisioning.push(createBucket(s3, needs.bucket));
    }
    if (needs.duckdb) duck = await (await DuckDBInstance.create(':memory:')).connect();
    await Promise.all(provisioning);
  });

  afterAll(async () => {
    duck?.closeSync();
    for (const client of clients) client.destroy();
    await Promise.all(engines.map((engine) => engine.stop()));
    rmSync(scratch, { recursive: true, force: true });
  });

  return {
    get dynamodb() {
      return started(dynamodb, 'DynamoDB Local');
    },
    get kinesis() {
      return started(kinesis, 'kinesalite');
    },
    get s3() {
      return started(s3, 's3rver');
    },
    get tenancy() {
      return new DynamoDbTenancyStore(started(dynamodb, 'DynamoDB Local'), started(needs.tables, 'tables').tenancy);
    },
    endpoints,
    scratch,
    s3Directory,
    async readShards() {
      const stream = started(needs.stream?.name ?? undefined, 'a stream');
      return (await readStream(started(kinesis, 'kinesalite'), stream)).map((shard) =>
        shard.records.map((r) => ({ shardId: shard.shardId, sequenceNumber: r.sequenceNumber, data: r.data, approximateArrivalTimestamp: r.arrivedAt })),
      );
    },
    async downloadBucket() {
      const client = started(s3, 's3rver');
      const bucket = started(needs.bucket, 'a bucket');
      const dir = mkdtempSync(path.join(scratch, 'bucket-'));
      const { Contents = [] } = await client.send(new ListObjectsV2Command({ Bucket: bucket }));
      const keys = Contents.map((o) => o.Key!).sort();
      for (const key of keys) {
        const { Body } = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        mkdirSync(path.dirname(path.join(dir, key)), { recursive: true });
        writeFileSync(path.join(dir, key), await Body!.transformToByteArray());
      }
      return { dir, keys };
    },
    async query(sql: string) {
      return (await started(duck, 'DuckDB').runAndReadAll(sql)).getRowObjectsJS() as Record<string, unknown>[];
    },
  };
}
