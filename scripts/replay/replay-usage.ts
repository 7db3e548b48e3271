/** The usage text of `npm run replay`, apart from the script so tests can read it without running it. */

export const REPLAY_USAGE = `usage: npm run replay -- (--failure <file> | [--stream <name>] --shard <id> --from <seq> --to <seq>)
                          (--bucket <bucket> | --local) [--endpoint <kinesis url>] [--s3-endpoint <s3 url>] [--chunk-size <n>]

Re-lands a shard and sequence-number range of the trace stream into the data bucket (docs/landing.md, "Replay").

  --failure <file>     the message the on-failure destination received (its KinesisBatchInfo names the range);
                       fetch it with: npm run --silent ops -- failures --stack <stack> (docs/operations.md)
  --stream <name>      the stream (deployed: the stack output TraceStreamName)
  --shard <id>         e.g. shardId-000000000000
  --from <seq> --to <seq>
                       first and last sequence number of the range, inclusive (decimal digits)
  --bucket <bucket>    the data bucket (deployed: the stack output DataBucketName)
  --local              the running local stack's stream, bucket, endpoints and credentials
  --chunk-size <n>     records per object written (a positive integer)
  --help               this text

Where --local finds its numbers: when the local landing gives a batch up, npm start logs
  [local] landing gave up on <shard id> <first seq>..<last seq> …; replay it with: npm run replay -- --local --shard … --from … --to …
and every landed object is named <shard id>-<first seq>….parquet under .local/s3/local-trace-data/traces/;
.local/checkpoints.json holds the last sequence number handled per shard.
Deployed, AWS credentials and region come from the usual environment (AWS_PROFILE, AWS_REGION).
`;
