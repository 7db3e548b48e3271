/** The usage texts of `npm start`, `npm run compact` and `npm run query`, apart from the scripts so tests can read them without running them. */

/** The port of the local API when `PORT` is not set. */
export const DEFAULT_LOCAL_PORT = 3000;

/** The query `npm start` suggests (and the README's quickstart runs): the newest traces, a screenful. */
export const FIRST_QUERY = 'SELECT trace_id, root_span_name, span_count, timestamp FROM traces ORDER BY timestamp DESC LIMIT 10';

/** The banner's last line: `npm start` prints it once the stack serves and both demo keys are printed above it. */
export const READY_LINE = 'Press Ctrl-C to stop.';

export const START_USAGE = `usage: npm start [-- --reset] [--bundled] [--dynamodb-port N] [--kinesis-port N] [--s3-port N]

Starts the whole pipeline on this machine: DynamoDB Local, kinesalite and s3rver, the ingest handler
behind http://127.0.0.1:$PORT and the landing handler polling the stream. Prints two demo API keys.

  --reset   start empty (deletes the state directory first)
  --bundled run the five bundles cdk deploy ships (synthesized into the state directory's cdk.out),
            each in its own Node 24 process with the template's environment
  --dynamodb-port, --kinesis-port, --s3-port N
            the engines' ports (default: each a free port; or DYNAMODB_PORT, KINESIS_PORT, S3_PORT)
  --help    this text

Environment: PORT (the API's port, default ${DEFAULT_LOCAL_PORT}), DYNAMODB_PORT, KINESIS_PORT, S3_PORT,
TRACE_INGEST_LOCAL_DIR (state directory, default ./.local).
Details: docs/local.md.
`;

export const COMPACT_USAGE = `usage: npm run compact [-- --closed-only]

Deletes the hours past each organization's retention (docs/operations.md, "Retention"), then compacts
every pending hour of the running local stack's bucket now, open hours included (the timer of npm start
does both every minute, and compacts only closed hours). Needs the local stack running (npm start);
prints one line per hour it changed.

  --closed-only   only hours that have closed, as the deployed planner does
  --help          this text
`;

export const QUERY_USAGE = `usage: npm run query -- [--json] "<SQL over the views traces and spans (every row once), traces_raw and spans_raw (as landed)>"

Runs SQL with DuckDB over the Parquet that the local stack landed (state in .local/, or
TRACE_INGEST_LOCAL_DIR). traces and spans hold every row once: compacted hours from their compacted
objects, the rest (not compacted yet) as landed, where a replay or retry may show a row twice until its hour
is compacted (npm run compact). traces_raw and spans_raw are every landed object as it is.
org_id, dt and hour come from the object paths.
Several statements separated by ';' each print their result, in order.

  --json   one JSON array of row objects per statement, one per line: integers as numbers
           (as strings beyond 2^53), timestamps as ISO 8601 in UTC with microseconds
  --help   this text
`;
