/**
 * Re-lands a shard + sequence range from the trace stream into the data bucket.
 *
 *   npx tsx scripts/replay/replay.ts --failure failure.json --bucket <data bucket>
 *   npx tsx scripts/replay/replay.ts --stream <name> --shard shardId-000000000000 \
 *     --from <first sequence number> --to <last sequence number> --bucket <data bucket> [--endpoint http://127.0.0.1:4567 --s3-endpoint …]
 *
 * `--failure` takes the message the on-failure destination received (its `KinesisBatchInfo`). AWS
 * credentials and region come from the usual environment. See docs/landing.md, "Replay".
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { S3Client } from '@aws-sdk/client-s3';
import { S3LandingStore } from '../../lambda/landing/s3-landing-store.js';
import { type ShardRange, rangeFromFailureMessage, replayRange } from './replay-range.js';

const { values } = parseArgs({
  options: {
    failure: { type: 'string' },
    stream: { type: 'string' },
    shard: { type: 'string' },
    from: { type: 'string' },
    to: { type: 'string' },
    bucket: { type: 'string' },
    endpoint: { type: 'string' },
    's3-endpoint': { type: 'string' },
    'chunk-size': { type: 'string' },
  },
});

function usage(problem: string): never {
  console.error(`${problem}\nusage: replay.ts (--failure <file> | --stream <name> --shard <id> --from <seq> --to <seq>) --bucket <bucket> [--endpoint <kinesis url>] [--s3-endpoint <s3 url>] [--chunk-size <n>]`);
  process.exit(2);
}

const range: ShardRange = values.failure
  ? rangeFromFailureMessage(JSON.parse(readFileSync(values.failure, 'utf8')))
  : { streamName: values.stream ?? usage('--stream missing'), shardId: values.shard ?? usage('--shard missing'), startSequenceNumber: values.from ?? usage('--from missing'), endSequenceNumber: values.to ?? usage('--to missing') };
const bucket = values.bucket ?? usage('--bucket missing');
const local = (endpoint: string | undefined) => (endpoint ? { endpoint, forcePathStyle: true } : {});

const summary = await replayRange(
  {
    kinesis: new KinesisClient(local(values.endpoint)),
    store: new S3LandingStore(new S3Client(local(values['s3-endpoint'] ?? values.endpoint)), bucket),
    logger: { warn: (message, extra) => console.warn(message, extra), error: (message, extra) => console.error(message, extra) },
    ...(values['chunk-size'] ? { chunkSize: Number(values['chunk-size']) } : {}),
  },
  range,
);
console.log(JSON.stringify({ range, ...summary }));
