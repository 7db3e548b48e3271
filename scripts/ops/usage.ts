/** The usage text of `npm run ops` and `npm run destroy`, apart from the script so tests can read it without running it. */
export const OPS_USAGE = `usage: npm run --silent ops -- <command> --stack NAME [--region REGION]

Commands the runbooks use (docs/operations.md), against a deployed stack; the region defaults to AWS_REGION.

  resources [--name LOGICAL_ID]   the physical name of every resource of the stack (or of one: e.g.
                                  --name IngestHandlerLogs, the ingest function's log group)
  failures list                   the stream ranges in the landing's failure queue, without taking them off
  failures replay [--dry-run]     replays each range into the data bucket and deletes its message once it
                                  has landed again; a range that fails (or the stream no longer holds) stays
  queue purge --queue failure|compaction-dead-letters --yes
                                  deletes every message of that queue (after the cause is fixed)
  destroy [--yes]                 what deleting the stack deletes and keeps, with the command for each kept
                                  resource; with --yes, runs cdk destroy
  --help                          this text
`;

/** The usage text of `npm run destroy` (`ops destroy`). */
export const DESTROY_USAGE = `usage: npm run destroy -- --stack NAME [--region REGION] [--yes]

Deletes a deployed stack, in two steps. Without --yes it deletes nothing: it prints what deleting the stack
deletes and what it keeps (the tables, the buckets, API Gateway's CloudWatch role), with the command that
deletes each kept resource; after a first deploy that failed and rolled back, exactly what the rollback left.
With --yes it runs cdk destroy. The region defaults to AWS_REGION; the AWS credentials are the AWS CLI's.
Details: docs/operations.md "Teardown".

  --stack NAME      the stack (e.g. TraceIngest)
  --region REGION   its region (default: AWS_REGION)
  --yes             delete it
  --help            this text
`;
