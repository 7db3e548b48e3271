/**
 * Re-lands a shard + sequence range from the trace stream into the data bucket (see docs/landing.md, "Replay").
 *
 *   npm run replay -- --failure failure.json --bucket <data bucket>
 *   npm run replay -- --stream <name> --shard shardId-000000000000 --from <seq> --to <seq> --bucket <data bucket>
 *   npm run replay -- --local --shard shardId-000000000000 --from <seq> --to <seq>
 *
 * `--failure` takes the message the on-failure destination received (its `KinesisBatchInfo`). Deployed, AWS
 * credentials and region come from the usual environment; `--local` takes the stream, bucket, endpoints,
 * region and credentials of the running local stack from `.local/endpoints.json`.
 */
import { readFileSync } from 'node:fs';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { S3Client } from '@aws-sdk/client-s3';
import { S3LandingStore } from '../../lambda/landing/s3-landing-store.js';
import { defineCommand, missingAwsSetup, parseCommandLine, stderrLogger, UsageError } from '../cli/command-line.js';
import { readLocalEndpoints } from '../../devkit/local-stack/local-state.js';
import { localClientConfig } from '../../devkit/engines/provision.js';
import { type ShardRange, rangeFromFailureMessage, replayRange } from './replay-range.js';
import { REPLAY_USAGE } from './replay-usage.js';

const SEQUENCE_NUMBER = /^\d{1,128}$/;

const required = (value: string | undefined, flag: string): string => {
  if (value === undefined || value === '') throw new UsageError(`${flag} missing`);
  return value;
};

/** One line a person can act on for the errors a first run meets; the first line of the message otherwise. */
function describeReplayError(error: unknown): string {
  const { name = 'Error', message = String(error) } = (error ?? {}) as { name?: string; message?: string };
  const setup = missingAwsSetup(error);
  if (setup) return `${setup} (or use --local for the local stack)`;
  const first = message.split('\n')[0] ?? '';
  return name === 'Error' || name === 'UsageError' || name === 'LocalStackNotRunningError' ? first : `${name}: ${first}`;
}

const OPTIONS = {
  failure: { type: 'string' },
  stream: { type: 'string' },
  shard: { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
  bucket: { type: 'string' },
  local: { type: 'boolean', default: false },
  endpoint: { type: 'string' },
  's3-endpoint': { type: 'string' },
  'chunk-size': { type: 'string' },
} as const;

/** `npm run replay`: the range and what landed, as one JSON line; the command line is checked before anything is read. */
export const replayCommand = defineCommand({ name: 'replay', usage: REPLAY_USAGE, describe: describeReplayError }, async (argv, out) => {
  const parsed = parseCommandLine(argv, OPTIONS, REPLAY_USAGE, out);
  if (!parsed) return 0;
  const { values } = parsed;
  for (const flag of ['from', 'to'] as const) {
    const value = values[flag];
    if (value !== undefined && !SEQUENCE_NUMBER.test(value)) throw new UsageError(`--${flag} must be a Kinesis sequence number (decimal digits), not '${value}'`);
  }
  const chunkText = values['chunk-size'];
  if (chunkText !== undefined && !/^[1-9]\d{0,6}$/.test(chunkText)) throw new UsageError(`--chunk-size must be a positive integer, not '${chunkText}'`);
  const chunkSize = chunkText === undefined ? undefined : Number(chunkText);
  const local = values.local ? readLocalEndpoints() : undefined;
  const range: ShardRange = values.failure
    ? rangeFromFailureMessage(JSON.parse(readFileSync(values.failure, 'utf8')))
    : {
        streamName: values.stream ?? local?.stream ?? required(undefined, '--stream'),
        shardId: required(values.shard, '--shard'),
        startSequenceNumber: required(values.from, '--from'),
        endSequenceNumber: required(values.to, '--to'),
      };
  const bucket = values.bucket ?? local?.bucket ?? required(undefined, '--bucket (or --local)');
  const client = (endpoint: string | undefined) => (local ? localClientConfig(endpoint!) : endpoint ? { endpoint, forcePathStyle: true } : {});
  const kinesis = new KinesisClient(client(values.endpoint ?? local?.kinesis));
  const s3 = new S3Client(client(values['s3-endpoint'] ?? values.endpoint ?? local?.s3));
  try {
    const summary = await replayRange(
      {
        kinesis,
        store: new S3LandingStore(s3, bucket),
        logger: stderrLogger(out),
        ...(chunkSize ? { chunkSize } : {}),
      },
      range,
    );
    out.stdout.write(`${JSON.stringify({ range, ...summary })}\n`);
    // A replay over batches that had landed adds raw copies; the next compaction of their hours folds them in.
    out.stderr.write(`replayed; rows landed again are counted once in traces/spans after the next compaction${local ? ' (npm run compact)' : ''}\n`);
    return 0;
  } finally {
    kinesis.destroy();
    s3.destroy();
  }
});
