import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { CfnElement } from 'aws-cdk-lib';
import { build } from 'esbuild';
import { DATA_PREFIXES } from '../../../lambda/shared/service-constants.js';
import { ORGANIZATIONS_INDEX } from '../../../lambda/shared/tables.js';
import { DEFAULT_ENTRIES, type FunctionEntries } from '../../../lib/trace-ingest-stack.js';
import { defaultStack, PROJECT_ROOT, statementsOfRole } from '../support/synth-stack.js';

/**
 * Every AWS command a function's code can send, found in the sources its bundle is built from, must
 * be granted to that function's role: a missing grant is an AccessDenied the first time the code path
 * runs on AWS, which no local engine reports.
 */
const { stack, template } = defaultStack();
const roles: Record<keyof FunctionEntries, CfnElement> = {
  ingest: stack.ingest.handler.role?.node.defaultChild as CfnElement,
  landing: stack.landing.consumer.role?.node.defaultChild as CfnElement,
  compactionPlanner: stack.compaction.planner.role?.node.defaultChild as CfnElement,
  compactionWorker: stack.compaction.worker.role?.node.defaultChild as CfnElement,
  retentionSweeper: stack.retention.sweeper.role?.node.defaultChild as CfnElement,
};

/** IAM actions a command needs, where the action is not the command's own name (https://docs.aws.amazon.com/service-authorization/latest/reference/). */
const ACTION_OF: Record<string, string> = {
  's3:ListObjectsV2': 's3:ListBucket',
  's3:HeadObject': 's3:GetObject',
  's3:CreateMultipartUpload': 's3:PutObject',
  's3:UploadPart': 's3:PutObject',
  's3:CompleteMultipartUpload': 's3:PutObject',
  's3:DeleteObjects': 's3:DeleteObject',
  'sqs:SendMessageBatch': 'sqs:SendMessage',
  'sqs:DeleteMessageBatch': 'sqs:DeleteMessage',
  // TransactWriteItems is authorized per contained action; the rate limiter's transaction updates counters.
  'dynamodb:TransactWriteItems': 'dynamodb:UpdateItem',
};

/**
 * Commands a bundle contains but its function never sends, each with the reason. A class's methods are
 * bundled whole, so a shared adapter brings the commands of methods another function (or the admin CLI) calls.
 */
const NOT_SENT: Record<keyof FunctionEntries, Record<string, string>> = {
  ingest: {},
  landing: {},
  compactionPlanner: {
    's3:DeleteObject': 'S3LakeStore is bundled whole through the shared compose.ts; deleting superseded objects is the worker\'s',
    's3:AbortMultipartUpload': 'as above: multipart uploads are the worker\'s',
    'sqs:ChangeMessageVisibility': 'bringing a failed slice back sooner is the worker\'s (SqsSliceRetries)',
  },
  compactionWorker: {},
  retentionSweeper: {
    'dynamodb:GetItem': 'DynamoDbTenancyListing extends the point reads; the sweep only scans organizations and queries plans',
  },
};


/** The stack's resources a grant may name, by the name the table below uses. */
const NAMED: Record<string, { node: { defaultChild?: unknown } }> = {
  tenancyTable: stack.tables.tenancyTable,
  rateTable: stack.tables.rateTable,
  stream: stack.traceStream.stream,
  bucket: stack.landing.bucket,
  failureQueue: stack.landing.failureQueue,
  compactionQueue: stack.compaction.queue,
};
const NAME_OF = new Map(Object.entries(NAMED).map(([name, construct]) => [stack.getLogicalId(construct.node.defaultChild as CfnElement), name]));

/** A statement's resource as text: `bucket/traces/*` for `Fn::Join` of the bucket's ARN and `/traces/*`. */
function resourceName(resource: unknown): string {
  if (typeof resource === 'string') return resource;
  const r = resource as { 'Fn::GetAtt'?: [string, string]; 'Fn::Join'?: [string, unknown[]]; Ref?: string };
  if (r['Fn::GetAtt']?.[1] === 'Arn') return NAME_OF.get(r['Fn::GetAtt'][0]) ?? `${r['Fn::GetAtt'][0]} (not in NAMED)`;
  if (r['Fn::Join']) return r['Fn::Join'][1].map(resourceName).join(r['Fn::Join'][0]);
  return JSON.stringify(resource);
}

const objects = (...prefixes: string[]) => prefixes.map((prefix) => `bucket/${prefix}*`);

/**
 * The resources each function's code sends each action to: the table, stream, queue, or the bucket's prefixes
 * it reads and writes (from the same DATA_PREFIXES its code builds keys with). A grant must name exactly these:
 * one broader (a whole bucket, another table) or narrower fails. Every action the code sends must be here.
 */
const RESOURCES_OF: Record<keyof FunctionEntries, Record<string, string[]>> = {
  ingest: {
    'dynamodb:GetItem': ['tenancyTable', 'rateTable'],
    'dynamodb:BatchGetItem': ['rateTable'],
    'dynamodb:PutItem': ['rateTable'],
    'dynamodb:UpdateItem': ['rateTable'],
    'dynamodb:DeleteItem': ['rateTable'],
    'kinesis:PutRecords': ['stream'],
    's3:PutObject': objects(DATA_PREFIXES.overflow),
    // Only the overflow objects of its own refused traces.
    's3:DeleteObject': objects(DATA_PREFIXES.overflow),
  },
  landing: {
    's3:GetObject': objects(DATA_PREFIXES.overflow),
    's3:ListBucket': ['bucket'],
    's3:PutObject': objects(DATA_PREFIXES.traces, DATA_PREFIXES.spans, DATA_PREFIXES.deadLetter),
    // Sent by the event source mapping with the function's role (its on-failure destination), not by the code.
    'sqs:SendMessage': ['failureQueue'],
  },
  compactionPlanner: {
    's3:ListBucket': ['bucket'],
    's3:GetObject': objects(DATA_PREFIXES.partPlans, DATA_PREFIXES.manifests, DATA_PREFIXES.erasures),
    's3:PutObject': objects(DATA_PREFIXES.partPlans, DATA_PREFIXES.erasures),
    'sqs:SendMessage': ['compactionQueue'],
    // The erasure secret: one item, read or created once.
    'dynamodb:GetItem': ['tenancyTable'],
    'dynamodb:PutItem': ['tenancyTable'],
  },
  compactionWorker: {
    's3:ListBucket': ['bucket'],
    's3:GetObject': objects(DATA_PREFIXES.traces, DATA_PREFIXES.spans, DATA_PREFIXES.compacted, DATA_PREFIXES.manifests, DATA_PREFIXES.erasures),
    's3:PutObject': objects(DATA_PREFIXES.compacted, DATA_PREFIXES.manifests, DATA_PREFIXES.erasures),
    's3:DeleteObject': objects(DATA_PREFIXES.traces, DATA_PREFIXES.spans, DATA_PREFIXES.compacted, DATA_PREFIXES.manifests, DATA_PREFIXES.overflow, `${DATA_PREFIXES.erasures}index/`),
    'dynamodb:GetItem': ['tenancyTable'],
    'dynamodb:PutItem': ['tenancyTable'],
    's3:AbortMultipartUpload': objects(DATA_PREFIXES.compacted),
    'sqs:ChangeMessageVisibility': ['compactionQueue'],
    'sqs:SendMessage': ['compactionQueue'],
  },
  retentionSweeper: {
    // Organizations from their index, never a scan of the table (which holds key hashes and the erasure secret).
    'dynamodb:Scan': [`tenancyTable/index/${ORGANIZATIONS_INDEX}`],
    'dynamodb:Query': ['tenancyTable'],
    's3:ListBucket': ['bucket'],
    's3:DeleteObject': objects(DATA_PREFIXES.overflow),
    'sqs:SendMessage': ['compactionQueue'],
  },
};

/** `new XCommand(` in a source file, with the service of the client package X is imported from. */
function commandsIn(file: string): string[] {
  const source = readFileSync(path.join(PROJECT_ROOT, file), 'utf8');
  const serviceOf = new Map<string, string>();
  for (const [, names = '', service = ''] of source.matchAll(/import\s*(?:type\s*)?\{([^}]*)\}\s*from\s*'@aws-sdk\/client-([a-z0-9-]+)'/g)) {
    for (const name of names.split(',').map((part) => part.replace(/^\s*type\s+/, '').trim().split(/\s+as\s+/)[0] ?? '')) serviceOf.set(name, service);
  }
  return [...source.matchAll(/new (\w+)Command\(/g)].map(([, command = '']) => {
    const service = serviceOf.get(`${command}Command`);
    if (service === undefined) throw new Error(`${file}: ${command}Command is not imported from an @aws-sdk/client-* package`);
    return `${service}:${command}`;
  });
}

/** Files that read an object and take "no such key" as an answer: S3 gives that answer only with s3:ListBucket (else 403). */
function readsMissingObjects(file: string): boolean {
  const source = readFileSync(path.join(PROJECT_ROOT, file), 'utf8');
  return /new (GetObject|HeadObject)Command\(/.test(source) && /NoSuchKey|NotFound/.test(source);
}

async function bundleInputs(entry: string): Promise<string[]> {
  const result = await build({ entryPoints: [path.join(PROJECT_ROOT, entry)], absWorkingDir: PROJECT_ROOT, bundle: true, write: false, metafile: true, platform: 'node', format: 'esm', packages: 'external', logLevel: 'silent' });
  return Object.keys(result.metafile.inputs).filter((file) => file.startsWith('lambda/'));
}

const glob = (pattern: string) => new RegExp(`^${pattern.split('*').map((part) => part.replace(/[.?+^$()[\]{}|\\]/g, '\\$&')).join('.*')}$`);

describe.each(Object.keys(DEFAULT_ENTRIES) as (keyof FunctionEntries)[])('the %s role', (name) => {
  let needed: Map<string, string[]>;
  let granted: string[];
  let grantedOn: Map<string, Set<string>>;
  beforeAll(async () => {
    needed = new Map();
    for (const file of await bundleInputs(DEFAULT_ENTRIES[name])) {
      for (const command of commandsIn(file)) {
        const action = ACTION_OF[command] ?? command;
        needed.set(action, [...(needed.get(action) ?? []), file]);
      }
      if (readsMissingObjects(file)) needed.set('s3:ListBucket', [...(needed.get('s3:ListBucket') ?? []), `${file} (reads a missing object as missing)`]);
    }
    const statements = statementsOfRole(template, stack.getLogicalId(roles[name]));
    granted = statements.flatMap((statement) => statement.actions);
    grantedOn = new Map();
    for (const statement of statements) {
      for (const action of statement.actions) grantedOn.set(action, new Set([...(grantedOn.get(action) ?? []), ...statement.resources.map(resourceName)]));
    }
  });

  it('sends at least one AWS command (the scan found the code)', () => {
    expect(needed.size).toBeGreaterThan(0);
  });

  it('is granted every action its code needs, or the action is acknowledged as never sent by this function', () => {
    const missing = [...needed].filter(([action]) => !granted.some((pattern) => glob(pattern).test(action)) && NOT_SENT[name][action] === undefined);
    expect(missing).toEqual([]);
  });

  it('is granted each action it sends on exactly the resources and prefixes its code uses, no more', () => {
    const sent = [...needed.keys()].filter((action) => NOT_SENT[name][action] === undefined).sort();
    expect(sent.filter((action) => RESOURCES_OF[name][action] === undefined)).toEqual([]);
    for (const action of Object.keys(RESOURCES_OF[name])) {
      expect({ action, on: [...(grantedOn.get(action) ?? [])].sort() }).toEqual({ action, on: [...(RESOURCES_OF[name][action] ?? [])].sort() });
    }
  });

  it('acknowledges as never sent only actions its bundle holds and its role is not granted', () => {
    for (const action of Object.keys(NOT_SENT[name])) {
      expect([action, needed.has(action)]).toEqual([action, true]);
      expect([action, granted.some((pattern) => glob(pattern).test(action))]).toEqual([action, false]);
    }
  });
});

describe('the tenancy table in the bundles', () => {
  it('ingest holds its point reads, not the listings nor the admin store that writes', async () => {
    const inputs = await bundleInputs(DEFAULT_ENTRIES.ingest);
    expect(inputs).toContain('lambda/tenancy-store/dynamodb-tenancy-reader.ts');
    expect(inputs.filter((file) => /tenancy-store\/dynamodb-tenancy-(listing|store)\.ts$/.test(file))).toEqual([]);
  });

  it('the retention sweep holds its listings, not the admin store that writes', async () => {
    const inputs = await bundleInputs(DEFAULT_ENTRIES.retentionSweeper);
    expect(inputs).toContain('lambda/tenancy-store/dynamodb-tenancy-listing.ts');
    expect(inputs).not.toContain('lambda/tenancy-store/dynamodb-tenancy-store.ts');
  });
});
