import { Stack } from 'aws-cdk-lib';
import { CfnWorkGroup } from 'aws-cdk-lib/aws-athena';
import { CfnDatabase, CfnTable } from 'aws-cdk-lib/aws-glue';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { COLUMN_TYPE_NAMES, DATASETS, type DatasetSpec, PARTITION_KEYS } from '../../lambda/datasets/registry.js';
import { DATA_PREFIXES } from '../../lambda/shared/service-constants.js';
import { DEFAULT_STACK_NAME } from '../config.js';

/** Name of the Glue table over the slice manifests. */
export const MANIFESTS_TABLE = 'slice_manifests';

/**
 * The SQL of a dataset's exactly-once Athena view: per slice, the compacted objects its manifest names and the
 * raw objects it does not cover. The manifest table is read once (one reference), so one query sees one
 * version of each manifest; objects are matched by key (`$path` without `s3://<bucket>/`).
 */
export function exactlyOnceViewSql(dataset: DatasetSpec): string {
  const columns = dataset.columns.map((column) => `"${column.name}"`).join(', ');
  const keys = PARTITION_KEYS.join(', ');
  const source = (table: string, compacted: boolean) =>
    `SELECT ${columns}, ${keys}, regexp_replace("$path", '^s3://[^/]+/', '') AS object_key, ${compacted} AS is_compacted FROM ${table}`;
  return [
    `SELECT ${dataset.columns.map((column) => `d."${column.name}"`).join(', ')}, ${PARTITION_KEYS.map((key) => `d.${key}`).join(', ')}`,
    `FROM (${source(`${dataset.name}_raw`, false)} UNION ALL ${source(`${dataset.name}_compacted`, true)}) d`,
    `LEFT JOIN (SELECT ${keys}, ${dataset.name}.files AS files, transform(${dataset.name}.covered, c -> c.key) AS covered FROM ${MANIFESTS_TABLE}) m`,
    `ON m.org_id = d.org_id AND m.dt = d.dt AND m.hour = d.hour`,
    `LEFT JOIN (${erasedTracesSql()}) e`,
    `ON e.org_id = d.org_id AND e.dt = d.dt AND e.hour = d.hour AND e.trace_id = d.trace_id`,
    `WHERE ((d.is_compacted AND contains(m.files, d.object_key)) OR (NOT d.is_compacted AND (m.covered IS NULL OR NOT contains(m.covered, d.object_key))))`,
    `AND e.trace_id IS NULL`,
  ].join('\n');
}

/** Name of the Glue table over the erasure requests (lambda/erasure/erasure-record.ts). */
export const ERASURE_REQUESTS_TABLE = 'erasure_requests';

/**
 * The traces an open erasure request names, per hour: those with a trace row or a span row that matches its
 * selector and was received no later than the request. Both views leave them out from the moment the request
 * object exists (S3 lists and reads a new object at once after its PUT: strong read-after-write consistency,
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/Welcome.html#ConsistencyModel, so within the 60 s the issue
 * allows), until compaction has rewritten their hours without them (then the request is done, its selector
 * reduced to keyed hashes, and it matches nothing here). A trace's rows share one hour, so the join on the hour
 * lets a query's hour and day filters prune these reads too; with no open request, Athena's dynamic filtering on
 * the (empty) request side skips them.
 */
export function erasedTracesSql(): string {
  const matchColumns = ['trace_id', 'user_id', 'session_id', 'received_at', ...PARTITION_KEYS].join(', ');
  const rows = DATASETS.flatMap((dataset) => [`${dataset.name}_raw`, `${dataset.name}_compacted`]).map((table) => `SELECT ${matchColumns} FROM ${table}`).join(' UNION ALL ');
  return [
    `SELECT DISTINCT x.org_id, x.dt, x.hour, x.trace_id FROM (${rows}) x`,
    `JOIN ${ERASURE_REQUESTS_TABLE} r ON r.org_id = x.org_id`,
    `WHERE r.status <> 'done' AND to_unixtime(x.received_at) * 1000000 <= r.requested_at_micros`,
    `AND (contains(r.user_ids, x.user_id) OR contains(r.session_ids, x.session_id) OR contains(r.trace_ids, x.trace_id))`,
  ].join(' ');
}

/** A dataset's columns as Glue (Hive) declares them. */
const hiveColumns = (dataset: DatasetSpec) => dataset.columns.map((column) => ({ name: column.name, type: COLUMN_TYPE_NAMES[column.type].hive }));

/** The partition keys as Glue declares them: strings, as they stand in the object path. */
const HIVE_PARTITION_COLUMNS = PARTITION_KEYS.map((name) => ({ name, type: 'string' }));

/** A Glue table input for an Athena view: the SQL and its columns, encoded as Athena stores views it creates. */
function exactlyOnceViewInput(dataset: DatasetSpec, databaseName: string): CfnTable.TableInputProperty {
  const viewColumns = [...dataset.columns.map((column) => ({ name: column.name, type: COLUMN_TYPE_NAMES[column.type].athenaView })), ...PARTITION_KEYS.map((name) => ({ name, type: 'varchar' }))];
  const presto = { originalSql: exactlyOnceViewSql(dataset), catalog: 'awsdatacatalog', schema: databaseName, columns: viewColumns };
  return {
    name: dataset.name,
    tableType: 'VIRTUAL_VIEW',
    // Athena's guide for views made through the Glue API: without an empty PartitionKeys the view's queries fail.
    partitionKeys: [],
    parameters: { presto_view: 'true', comment: 'Presto View' },
    viewOriginalText: `/* Presto View: ${Buffer.from(JSON.stringify(presto)).toString('base64')} */`,
    viewExpandedText: '/* Presto View */',
    storageDescriptor: {
      columns: [...hiveColumns(dataset), ...HIVE_PARTITION_COLUMNS],
      serdeInfo: {},
    },
  };
}

/** First day partition projection enumerates; a query over all days lists every day since. */
export const PROJECTION_START_DATE = '2025-01-01';

export interface TraceCatalogProps {
  readonly bucket: IBucket;
  /** Prefix under which Athena writes query results in the bucket. */
  readonly resultsPrefix: string;
  /** The database a deployed stack whose name `catalogDatabaseName` refuses keeps: the name it has. */
  readonly keptDatabaseName?: string;
}

/**
 * The Glue database of a stack: `trace_ingest_` and the stack name, lower case, each run of other characters one
 * `_` (Athena's names are lower case, digits and `_`). The name is the account's and region's, so two stack names
 * that give the same one cannot both be created. Refused, with what to do: a stack name of which that form loses
 * something (letter case, runs of hyphens), except the default's, which owns its form; another name with the
 * default's form. Stack names of lower-case letters, digits and single hyphens map one to one. A deployed stack
 * keeps the name it has with `keptDatabaseName`: the views' SQL and every saved query name the database, and
 * another name is another database, with new tables.
 */
export function catalogDatabaseName(stackName: string, keptDatabaseName?: string): string {
  const glueForm = (name: string) => `trace_ingest_${name.toLowerCase().replace(/[^a-z0-9]+/g, '_')}`;
  const name = glueForm(stackName);
  if (keptDatabaseName !== undefined) {
    if (keptDatabaseName !== name) throw new Error(`glueDatabaseName ${keptDatabaseName} is not the database of stack '${stackName}', ${name}: another name would be another database, with new tables`);
    return name;
  }
  const refusal = (candidate: string): string | undefined => {
    if (candidate === DEFAULT_STACK_NAME) return undefined;
    const lost = [/[A-Z]/.test(candidate) ? 'letter case' : '', candidate.includes('--') ? 'a run of hyphens' : ''].filter((part) => part !== '');
    if (lost.length > 0) return `its Glue form loses ${lost.join(' and ')}`;
    if (glueForm(candidate) === glueForm(DEFAULT_STACK_NAME)) return `it is the default stack's (${DEFAULT_STACK_NAME})`;
    return undefined;
  };
  const why = refusal(stackName);
  if (why === undefined) return name;
  const example = stackName.toLowerCase().replace(/-+/g, '-');
  throw new Error(
    `Stack name '${stackName}' would name its Glue database ${name}, which other stack names give too (${why}); ` +
      'a second stack of the account and region with one of them fails to create. ' +
      `A new stack: use a name of lower-case letters, digits and single hyphens${refusal(example) === undefined ? ` (e.g. '${example}')` : ''}. ` +
      `A stack deployed under this name before: keep its database with -c glueDatabaseName=${name} (its GlueDatabaseName output).`,
  );
}

/**
 * Glue database; per dataset a raw table (`<dataset>_raw`, `<dataset>/org_id=…/dt=…/hour=…/`), a compacted table
 * (`<dataset>_compacted`, `compacted/<dataset>/…`) and the exactly-once view (`<dataset>`); the slice manifests
 * (`slice_manifests`, JSON). All tables use partition projection so Athena finds
 * partitions without a crawler or `MSCK REPAIR`. `org_id` is injected: every query names its
 * organization, which is also what keeps one tenant's query off another tenant's objects.
 */
export class TraceCatalog extends Construct {
  public readonly database: CfnDatabase;
  public readonly databaseName: string;
  /** Per dataset: the raw table (`<name>_raw`), the compacted table (`<name>_compacted`) and the exactly-once view (`<name>`). */
  public readonly tables: Record<DatasetSpec['name'], { raw: CfnTable; compacted: CfnTable; view: CfnTable }>;
  /** The slice manifests (`slice_manifests`), one JSON row per organization, date and hour. */
  public readonly manifests: CfnTable;
  /** The erasure requests (`erasure_requests`), one JSON row each: the views leave out what the open ones name. */
  public readonly erasureRequests: CfnTable;
  public readonly workGroup: CfnWorkGroup;

  constructor(scope: Construct, id: string, props: TraceCatalogProps) {
    super(scope, id);
    const stack = Stack.of(this);
    this.databaseName = catalogDatabaseName(stack.stackName, props.keptDatabaseName);
    this.database = new CfnDatabase(this, 'Database', {
      catalogId: stack.account,
      databaseInput: { name: this.databaseName, description: 'Landed traces and spans (Parquet) of the Trace Ingest service' },
    });
    const bucketName = props.bucket.bucketName;
    const projection = (prefix: string) => ({
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
      'storage.location.template': `s3://${bucketName}/${prefix}org_id=\${org_id}/dt=\${dt}/hour=\${hour}/`,
    });
    const table = (logicalId: string, name: string, prefix: string, storage: { columns: { name: string; type: string }[]; json?: boolean }): CfnTable => {
      const created = new CfnTable(this, logicalId, {
        catalogId: stack.account,
        databaseName: this.databaseName,
        tableInput: {
          name,
          tableType: 'EXTERNAL_TABLE',
          parameters: { EXTERNAL: 'TRUE', classification: storage.json ? 'json' : 'parquet', ...projection(prefix) },
          partitionKeys: HIVE_PARTITION_COLUMNS,
          storageDescriptor: {
            location: `s3://${bucketName}/${prefix}`,
            columns: storage.columns,
            ...(storage.json
              ? {
                  inputFormat: 'org.apache.hadoop.mapred.TextInputFormat',
                  outputFormat: 'org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat',
                  serdeInfo: { serializationLibrary: 'org.openx.data.jsonserde.JsonSerDe' },
                }
              : {
                  inputFormat: 'org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat',
                  outputFormat: 'org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat',
                  serdeInfo: { serializationLibrary: 'org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe', parameters: { 'serialization.format': '1' } },
                }),
          },
        },
      });
      created.addResourceDependency(this.database);
      return created;
    };
    const manifestDataset = 'struct<files:array<string>,rows:bigint,covered:array<struct<key:string,etag:string>>>';
    this.manifests = table('ManifestsTable', MANIFESTS_TABLE, DATA_PREFIXES.manifests, {
      json: true,
      columns: [
        { name: 'generation', type: 'bigint' },
        { name: 'compacted_at', type: 'string' },
        { name: 'traces', type: manifestDataset },
        { name: 'spans', type: manifestDataset },
      ],
    });
    this.erasureRequests = new CfnTable(this, 'ErasureRequestsTable', {
      catalogId: stack.account,
      databaseName: this.databaseName,
      tableInput: {
        name: ERASURE_REQUESTS_TABLE,
        tableType: 'EXTERNAL_TABLE',
        parameters: {
          EXTERNAL: 'TRUE',
          classification: 'json',
          'projection.enabled': 'true',
          'projection.org_id.type': 'injected',
          'storage.location.template': `s3://${bucketName}/${DATA_PREFIXES.erasures}requests/org_id=\${org_id}/`,
        },
        partitionKeys: [{ name: 'org_id', type: 'string' }],
        storageDescriptor: {
          location: `s3://${bucketName}/${DATA_PREFIXES.erasures}requests/`,
          columns: [
            { name: 'erasure_id', type: 'string' },
            { name: 'status', type: 'string' },
            { name: 'requested_at_micros', type: 'bigint' },
            { name: 'user_ids', type: 'array<string>' },
            { name: 'session_ids', type: 'array<string>' },
            { name: 'trace_ids', type: 'array<string>' },
          ],
          inputFormat: 'org.apache.hadoop.mapred.TextInputFormat',
          outputFormat: 'org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat',
          serdeInfo: { serializationLibrary: 'org.openx.data.jsonserde.JsonSerDe' },
        },
      },
    });
    this.erasureRequests.addResourceDependency(this.database);
    const tablesOf = (dataset: DatasetSpec) => {
      const title = dataset.name === 'traces' ? 'Traces' : 'Spans';
      const raw = table(`${title}Table`, `${dataset.name}_raw`, DATA_PREFIXES[dataset.name], { columns: hiveColumns(dataset) });
      const compacted = table(`${title}CompactedTable`, `${dataset.name}_compacted`, `${DATA_PREFIXES.compacted}${DATA_PREFIXES[dataset.name]}`, { columns: hiveColumns(dataset) });
      const view = new CfnTable(this, `${title}View`, {
        catalogId: stack.account,
        databaseName: this.databaseName,
        tableInput: exactlyOnceViewInput(dataset, this.databaseName),
      });
      view.addResourceDependency(raw);
      view.addResourceDependency(compacted);
      view.addResourceDependency(this.manifests);
      view.addResourceDependency(this.erasureRequests);
      return { raw, compacted, view };
    };
    const [traces, spans] = DATASETS;
    this.tables = { traces: tablesOf(traces), spans: tablesOf(spans) };
    // Each view reads the other dataset's tables too (a trace is erased when any of its spans matches).
    for (const dataset of DATASETS) {
      for (const other of DATASETS.filter((candidate) => candidate !== dataset)) {
        this.tables[dataset.name].view.addResourceDependency(this.tables[other.name].raw);
        this.tables[dataset.name].view.addResourceDependency(this.tables[other.name].compacted);
      }
    }

    this.workGroup = new CfnWorkGroup(this, 'WorkGroup', {
      // The database's name in the workgroup's alphabet, so that the one refused or kept is the other too.
      name: this.databaseName.replace(/_/g, '-'),
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
