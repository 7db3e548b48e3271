import { Match } from 'aws-cdk-lib/assertions';
import { COLUMN_TYPE_NAMES, DATASETS } from '../../../lambda/datasets/registry.js';
import { RATE_TABLE, TENANCY_TABLE } from '../../../lambda/shared/tables.js';
import { DEFAULT_CONFIG } from '../../../lib/config.js';
import { RAW_RETENTION_DAYS } from '../../../lib/constructs/landing.js';
import { defaultStack } from '../support/synth-stack.js';

describe('data resources', () => {
  const { stack, template } = defaultStack();
  const logicalId = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);
  const resource = (construct: { node: { defaultChild?: unknown } }) =>
    template.toJSON().Resources[logicalId(construct)] as { Properties: Record<string, unknown>; DeletionPolicy?: string };

  it('keeps data when the stack is deleted, and nothing when a first create rolls back (the account\'s API Gateway role: test/infra/account-logging-role.test.ts)', () => {
    // Retain would also keep what a rolled-back create made: orphans of no stack, one set per retry.
    const resources = Object.values(template.toJSON().Resources as Record<string, { Type: string; DeletionPolicy?: string; UpdateReplacePolicy?: string }>);
    const kept = resources.filter((r) => r.DeletionPolicy !== undefined && r.DeletionPolicy !== 'Delete');
    expect(kept.map((r) => r.Type).sort()).toEqual(['AWS::DynamoDB::Table', 'AWS::DynamoDB::Table', 'AWS::S3::Bucket', 'AWS::S3::Bucket']);
    for (const resource of kept) expect(resource).toMatchObject({ DeletionPolicy: 'RetainExceptOnCreate', UpdateReplacePolicy: 'Retain' });
  });

  describe('DynamoDB tables', () => {
    it.each([
      ['tenancy', () => stack.tables.tenancyTable, TENANCY_TABLE],
      ['rate', () => stack.tables.rateTable, RATE_TABLE],
    ])('builds the %s table from the shared definition: on demand, PITR, encrypted, retained', (_name, table, definition) => {
      const { Properties: properties, DeletionPolicy } = resource(table());
      expect(properties).toEqual(
        expect.objectContaining({
          BillingMode: 'PAY_PER_REQUEST',
          KeySchema: [
            { AttributeName: definition.partitionKey.name, KeyType: 'HASH' },
            { AttributeName: definition.sortKey.name, KeyType: 'RANGE' },
          ],
          PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
          SSESpecification: { SSEEnabled: true },
          DeletionProtectionEnabled: true,
        }),
      );
      expect(DeletionPolicy).toBe('RetainExceptOnCreate');
      const indexes = (properties.GlobalSecondaryIndexes as { IndexName: string }[] | undefined) ?? [];
      expect(indexes.map((index) => index.IndexName)).toEqual(definition.globalIndexes.map((index) => index.indexName));
    });

    it('expires rate-window items by TTL on the shared attribute', () => {
      expect(resource(stack.tables.rateTable).Properties.TimeToLiveSpecification).toEqual({ AttributeName: RATE_TABLE.timeToLiveAttribute, Enabled: true });
      expect(resource(stack.tables.tenancyTable).Properties.TimeToLiveSpecification).toBeUndefined();
    });

    it('leaves physical table names to CloudFormation', () => {
      expect(resource(stack.tables.tenancyTable).Properties.TableName).toBeUndefined();
      expect(resource(stack.tables.rateTable).Properties.TableName).toBeUndefined();
    });
  });

  it('makes the trace stream on-demand and encrypted with the AWS-managed key', () => {
    template.hasResourceProperties('AWS::Kinesis::Stream', {
      StreamModeDetails: { StreamMode: 'ON_DEMAND' },
      StreamEncryption: { EncryptionType: 'KMS', KeyId: 'alias/aws/kinesis' },
      RetentionPeriodHours: DEFAULT_CONFIG.streamRetentionHours,
    });
  });

  describe('buckets', () => {
    it.each([
      ['data', () => stack.landing.bucket],
      ['access-log', () => stack.landing.accessLogsBucket],
    ])('blocks public access, encrypts, disables ACLs and retains the %s bucket', (_name, bucket) => {
      const { Properties: properties, DeletionPolicy } = resource(bucket());
      expect(properties).toEqual(
        expect.objectContaining({
          PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
          BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
          OwnershipControls: { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] },
        }),
      );
      expect(DeletionPolicy).toBe('RetainExceptOnCreate');
    });

    it.each([
      ['data', () => stack.landing.bucket],
      ['access-log', () => stack.landing.accessLogsBucket],
    ])('denies non-TLS and pre-TLS-1.2 requests to the %s bucket', (_name, bucket) => {
      template.hasResourceProperties('AWS::S3::BucketPolicy', {
        Bucket: { Ref: logicalId(bucket()) },
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({ Effect: 'Deny', Action: 's3:*', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
            Match.objectLike({ Effect: 'Deny', Action: 's3:*', Condition: { NumericLessThan: { 's3:TlsVersion': 1.2 } } }),
          ]),
        },
      });
    });

    it('logs data bucket access to the access-log bucket', () => {
      expect(resource(stack.landing.bucket).Properties.LoggingConfiguration).toEqual({
        DestinationBucketName: { Ref: logicalId(stack.landing.accessLogsBucket) },
        LogFilePrefix: 'data-bucket/',
      });
    });

    it('expires overflow objects, dead letters, Athena results, incomplete uploads and raw landed objects past the late window, and keeps compacted data by default', () => {
      const rules = (resource(stack.landing.bucket).Properties.LifecycleConfiguration as { Rules: LifecycleRule[] }).Rules;
      const byPrefix = new Map(rules.filter((rule) => rule.Prefix !== undefined).map((rule) => [rule.Prefix, rule.ExpirationInDays]));
      expect(byPrefix.get('overflow/')).toBe(7);
      expect(byPrefix.get('dead-letter/')).toBe(90);
      expect(byPrefix.get('athena-results/')).toBe(7);
      // Late data (24 h) plus a replay within the stream retention (24 h) plus a day of margin.
      expect(byPrefix.get('traces/')).toBe(RAW_RETENTION_DAYS);
      expect(byPrefix.get('spans/')).toBe(RAW_RETENTION_DAYS);
      expect(RAW_RETENTION_DAYS).toBeGreaterThanOrEqual(3);
      expect(byPrefix.has('compacted/')).toBe(false);
      expect(byPrefix.has('manifests/')).toBe(false);
      // Bucket-wide, so it also ends a compaction's multipart upload left open by a run killed before it could abort.
      const abortRules = rules.filter((rule) => 'AbortIncompleteMultipartUpload' in rule);
      expect(abortRules).toEqual([expect.objectContaining({ AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 }, Status: 'Enabled' })]);
      expect(abortRules[0]).not.toHaveProperty('Prefix');
      expect(abortRules[0]).not.toHaveProperty('Filter');
    });
  });

  describe('consumer event source mapping', () => {
    it('sets every setting on purpose: finite retries and age, bisect, whole-batch failure, failure queue', () => {
      const { landing } = DEFAULT_CONFIG;
      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        EventSourceArn: { 'Fn::GetAtt': [logicalId(stack.traceStream.stream), 'Arn'] },
        FunctionName: { Ref: logicalId(stack.landing.consumer) },
        StartingPosition: 'TRIM_HORIZON',
        BatchSize: landing.batchSize,
        MaximumBatchingWindowInSeconds: landing.maxBatchingWindow.toSeconds(),
        BisectBatchOnFunctionError: true,
        MaximumRetryAttempts: landing.retryAttempts,
        MaximumRecordAgeInSeconds: landing.maxRecordAge.toSeconds(),
        ParallelizationFactor: 1,
        DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [logicalId(stack.landing.failureQueue), 'Arn'] } } },
      });
    });

    it('does not report batch item failures: the consumer fails whole batches so retried object keys stay deterministic', () => {
      const mappings = Object.values(template.findResources('AWS::Lambda::EventSourceMapping', { Properties: { FunctionName: { Ref: logicalId(stack.landing.consumer) } } })) as {
        Properties: Record<string, unknown>;
      }[];
      expect(mappings).toHaveLength(1);
      expect(mappings[0]?.Properties.FunctionResponseTypes).toBeUndefined();
    });

    it('keeps failed records replayable: finite retries send a failing batch on, before the stream retention would drop its records', () => {
      const [mapping] = Object.values(template.findResources('AWS::Lambda::EventSourceMapping', { Properties: { FunctionName: { Ref: logicalId(stack.landing.consumer) } } })) as {
        Properties: { MaximumRetryAttempts: number; MaximumRecordAgeInSeconds: number };
      }[];
      const retentionHours = resource(stack.traceStream.stream).Properties.RetentionPeriodHours as number;
      expect(mapping?.Properties.MaximumRetryAttempts).toBe(DEFAULT_CONFIG.landing.retryAttempts);
      // -1 would retry forever, stalling the shard; Lambda accepts -1..10000 (https://docs.aws.amazon.com/lambda/latest/api/API_CreateEventSourceMapping.html).
      expect(Number.isInteger(mapping?.Properties.MaximumRetryAttempts)).toBe(true);
      expect(mapping?.Properties.MaximumRetryAttempts).toBeGreaterThanOrEqual(0);
      expect(mapping?.Properties.MaximumRetryAttempts).toBeLessThanOrEqual(10_000);
      expect(mapping?.Properties.MaximumRecordAgeInSeconds).toBe(DEFAULT_CONFIG.landing.maxRecordAge.toSeconds());
      expect(mapping?.Properties.MaximumRecordAgeInSeconds).toBeLessThan(retentionHours * 3600);
    });

    it('makes the failure queue encrypted, TLS-only and long-lived', () => {
      template.hasResourceProperties('AWS::SQS::Queue', { SqsManagedSseEnabled: true, MessageRetentionPeriod: 14 * 24 * 3600 });
      template.hasResourceProperties('AWS::SQS::QueuePolicy', {
        PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]) },
      });
    });
  });

  describe('Glue catalog', () => {
    const tables = template.findResources('AWS::Glue::Table');
    const tableInput = (name: string) =>
      (Object.values(tables) as { Properties: { TableInput: TableInput } }[]).find((table) => table.Properties.TableInput.Name === name)?.Properties.TableInput;

    it.each(DATASETS.flatMap((dataset) => [[`${dataset.name}_raw`, dataset] as const, [`${dataset.name}_compacted`, dataset] as const]))('defines the %s table with the landed Parquet columns', (name, dataset) => {
      const input = tableInput(name);
      expect(input?.StorageDescriptor.Columns).toEqual(dataset.columns.map((column) => ({ Name: column.name, Type: COLUMN_TYPE_NAMES[column.type].hive })));
      expect(input?.PartitionKeys).toEqual([
        { Name: 'org_id', Type: 'string' },
        { Name: 'dt', Type: 'string' },
        { Name: 'hour', Type: 'string' },
      ]);
      expect(input?.StorageDescriptor.SerdeInfo.SerializationLibrary).toBe('org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe');
      expect(input?.StorageDescriptor.InputFormat).toBe('org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat');
    });

    it.each([
      ['traces_raw', 'traces/'],
      ['spans_raw', 'spans/'],
      ['traces_compacted', 'compacted/traces/'],
      ['spans_compacted', 'compacted/spans/'],
      ['slice_manifests', 'manifests/'],
    ] as const)('projects %s partitions from the object layout, so no crawler is needed', (name, prefix) => {
      const parameters = tableInput(name)?.Parameters;
      expect(parameters).toEqual(
        expect.objectContaining({
          'projection.enabled': 'true',
          'projection.org_id.type': 'injected',
          'projection.dt.type': 'date',
          'projection.dt.format': 'yyyy-MM-dd',
          'projection.dt.interval': '1',
          'projection.dt.interval.unit': 'DAYS',
        }),
      );
      expect(JSON.stringify(parameters?.['storage.location.template'])).toContain(`/${prefix}org_id=\${org_id}/dt=\${dt}/hour=\${hour}/`);
    });

    it.each(DATASETS.map((dataset) => [dataset.name, dataset] as const))('defines %s as an Athena view over raw, compacted and the manifests, with every column', (name, dataset) => {
      const input = tableInput(name) as TableInput & { TableType: string; ViewOriginalText: string };
      expect(input.TableType).toBe('VIRTUAL_VIEW');
      expect(input.PartitionKeys).toEqual([]);
      const view = JSON.parse(Buffer.from(/^\/\* Presto View: (.*) \*\/$/.exec(input.ViewOriginalText)![1]!, 'base64').toString('utf8')) as { originalSql: string; columns: { name: string }[] };
      expect(view.columns.map((column) => column.name)).toEqual([...dataset.columns.map((column) => column.name), 'org_id', 'dt', 'hour']);
      expect(view.originalSql).toContain(`FROM ${name}_raw`);
      expect(view.originalSql).toContain(`FROM ${name}_compacted`);
      // One reference to the manifests: one query reads one version of each.
      expect(view.originalSql.match(/slice_manifests/g)).toHaveLength(1);
    });

    it('defines erasure_requests over the request objects, partitioned by the injected organization, and both views read it', () => {
      const input = tableInput('erasure_requests') as TableInput & { Parameters: Record<string, unknown> };
      expect(input.PartitionKeys).toEqual([{ Name: 'org_id', Type: 'string' }]);
      expect(input.Parameters).toEqual(expect.objectContaining({ 'projection.enabled': 'true', 'projection.org_id.type': 'injected' }));
      expect(JSON.stringify(input.Parameters['storage.location.template'])).toContain('/erasures/requests/org_id=${org_id}/');
      expect((input.StorageDescriptor.Columns as { Name: string }[]).map((column) => column.Name)).toEqual(['erasure_id', 'status', 'requested_at_micros', 'user_ids', 'session_ids', 'trace_ids']);
      for (const name of DATASETS.map((dataset) => dataset.name)) {
        const view = tableInput(name) as TableInput & { ViewOriginalText: string };
        expect(Buffer.from(/^\/\* Presto View: (.*) \*\/$/.exec(view.ViewOriginalText)![1]!, 'base64').toString('utf8')).toContain('JOIN erasure_requests r');
      }
    });

    it('maps the column types the Parquet writer produces', () => {
      expect(Object.fromEntries(Object.entries(COLUMN_TYPE_NAMES).map(([type, names]) => [type, names.hive]))).toEqual({
        string: 'string',
        nullable_string: 'string',
        int32: 'int',
        int64: 'bigint',
        double: 'double',
        timestamp: 'timestamp',
        string_list: 'array<string>',
      });
    });

    it('gives Athena a workgroup that encrypts results in the data bucket and caps scans', () => {
      template.hasResourceProperties('AWS::Athena::WorkGroup', {
        WorkGroupConfiguration: Match.objectLike({
          EnforceWorkGroupConfiguration: true,
          BytesScannedCutoffPerQuery: Match.anyValue(),
          ResultConfiguration: { EncryptionConfiguration: { EncryptionOption: 'SSE_S3' }, OutputLocation: Match.anyValue() },
        }),
      });
    });
  });
});

interface LifecycleRule {
  readonly Prefix?: string;
  readonly ExpirationInDays?: number;
  readonly Status: string;
}

interface TableInput {
  readonly Name: string;
  readonly Parameters: Record<string, unknown>;
  readonly PartitionKeys: unknown[];
  readonly StorageDescriptor: {
    readonly Columns: unknown[];
    readonly InputFormat: string;
    readonly SerdeInfo: { readonly SerializationLibrary: string };
  };
}
