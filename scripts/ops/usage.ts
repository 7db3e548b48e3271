/** The usage text of `npm run ops` and `npm run destroy`, apart from the script so tests can read it without running it. */
export const OPS_USAGE = `usage: npm run --silent ops -- <command> --stack NAME [--region REGION]
       npm run destroy -- --stack NAME [--region REGION] [--yes]

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
