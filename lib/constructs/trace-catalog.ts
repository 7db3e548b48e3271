import { Stack } from 'aws-cdk-lib';
import { CfnWorkGroup } from 'aws-cdk-lib/aws-athena';
import { CfnDatabase, CfnTable } from 'aws-cdk-lib/aws-glue';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { COLUMN_TYPE_NAMES, DATASETS, type DatasetSpec } from '../../lambda/landing/landing-schema.js';

/** First day partition projection enumerates; a query over all days lists every day since. */
export const PROJECTION_START_DATE = '2025-01-01';

export interface TraceCatalogProps {
  readonly bucket: IBucket;
  /** Prefix under which Athena writes query results in the bucket. */
  readonly resultsPrefix: string;
}

/**
 * Glue database and one table per landed dataset, laid out as
 * `<dataset>/org_id=<org>/dt=YYYY-MM-DD/*.parquet`, with partition projection so Athena finds
 * partitions without a crawler or `MSCK REPAIR`. `org_id` is injected: every query names its
 * organization, which is also what keeps one tenant's query off another tenant's objects.
 */
export class TraceCatalog extends Construct {
  public readonly database: CfnDatabase;
  public readonly databaseName: string;
  public readonly tables: Record<DatasetSpec['name'], CfnTable>;
  public readonly workGroup: CfnWorkGroup;

  constructor(scope: Construct, id: string, props: TraceCatalogProps) {
    super(scope, id);
    const stack = Stack.of(this);
    // Athena wants lower-case names with underscores; deriving from the stack name keeps two stacks apart.
    const suffix = stack.stackName.toLowerCase().replace(/[^a-z0-9]+/g, '_');
    this.databaseName = `trace_ingest_${suffix}`;
    this.database = new CfnDatabase(this, 'Database', {
      catalogId: stack.account,
      databaseInput: { name: this.databaseName, description: 'Landed traces and spans (Parquet) of the Trace Ingest service' },
    });
    const bucketName = props.bucket.bucketName;
    const tableFor = (dataset: DatasetSpec): CfnTable => {
      const table = new CfnTable(this, `${dataset.name === 'traces' ? 'Traces' : 'Spans'}Table`, {
        catalogId: stack.account,
        databaseName: this.databaseName,
        tableInput: {
          name: dataset.name,
          tableType: 'EXTERNAL_TABLE',
          parameters: {
            EXTERNAL: 'TRUE',
            classification: 'parquet',
            'projection.enabled': 'true',
            'projection.org_id.type': 'injected',
            'projection.dt.type': 'date',
            'projection.dt.format': 'yyyy-MM-dd',
            // Trace timestamps may run up to 24 h ahead of the server clock.
            'projection.dt.range': `${PROJECTION_START_DATE},NOW+1DAYS`,
            'projection.dt.interval': '1',
            'projection.dt.interval.unit': 'DAYS',
            'projection.hour.type': 'integer',
            'projection.hour.range': '0,23',
            'projection.hour.digits': '2',
            'storage.location.template': `s3://${bucketName}/${dataset.name}/org_id=\${org_id}/dt=\${dt}/hour=\${hour}/`,
          },
          partitionKeys: [
            { name: 'org_id', type: 'string' },
            { name: 'dt', type: 'string' },
            { name: 'hour', type: 'string' },
          ],
          storageDescriptor: {
            location: `s3://${bucketName}/${dataset.name}/`,
            inputFormat: 'org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat',
            outputFormat: 'org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat',
            serdeInfo: {
              serializationLibrary: 'org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe',
              parameters: { 'serialization.format': '1' },
            },
            columns: dataset.columns.map((column) => ({ name: column.name, type: COLUMN_TYPE_NAMES[column.type].hive })),
          },
        },
      });
      table.addResourceDependency(this.database);
      return table;
    };
    const [traces, spans] = DATASETS;
    this.tables = { traces: tableFor(traces), spans: tableFor(spans) };

    this.workGroup = new CfnWorkGroup(this, 'WorkGroup', {
      name: `trace-ingest-${suffix.replace(/_/g, '-')}`,
      description: 'Queries over landed traces; results encrypted in the data bucket',
      recursiveDeleteOption: true,
      workGroupConfiguration: {
        enforceWorkGroupConfiguration: true,
        publishCloudWatchMetricsEnabled: true,
        // Guards against an accidental full scan: 10 GiB per query.
        bytesScannedCutoffPerQuery: 10 * 1024 ** 3,
        engineVersion: { selectedEngineVersion: 'Athena engine version 3' },
        resultConfiguration: {
          outputLocation: `s3://${bucketName}/${props.resultsPrefix}`,
          encryptionConfiguration: { encryptionOption: 'SSE_S3' },
        },
      },
    });
  }
}
