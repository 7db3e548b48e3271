/**
 * `npm run compact`: deletes the hours past their organizations' retention, then compacts everything pending in the running local stack's bucket now, open hours
 * included (the timer of `npm start` waits for an hour to close). Prints one line per compacted hour.
 */
import { parseCommandLine, reportFailure } from '../cli/command-line.js';
import { compactLocal } from '../../devkit/local-stack/local-compaction.js';
import { COMPACT_USAGE } from './usage.js';
import { localPaths, readLocalEndpoints } from '../../devkit/local-stack/local-state.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';


async function main(): Promise<void> {
  const parsed = parseCommandLine(process.argv.slice(2), { 'closed-only': { type: 'boolean', default: false } }, COMPACT_USAGE);
  if (!parsed) return;
  const { values } = parsed;
  const paths = localPaths();
  const run = await compactLocal(readLocalEndpoints(paths), paths, { includeOpenHours: !values['closed-only'] });
  for (const c of run.compacted) {
    const slice = `${c.slice.orgId}/${c.slice.dt}/${c.slice.hour}`;
    process.stdout.write(
      c.outcome === 'compacted'
        ? `${slice}: generation ${c.generation}, ${c.rows.traces} traces, ${c.rows.spans} spans, ${c.duplicatesDropped} duplicate rows dropped${c.rowsErased ? `, ${c.rowsErased} rows erased` : ''}\n`
        : `${slice}: deleted ${c.objectsDeleted} objects of replaced generations\n`,
    );
  }
  for (const hour of run.retention?.deleted ?? []) {
    process.stdout.write(`${hour.slice.orgId}/${hour.slice.dt}/${hour.slice.hour}: past retention, ${hour.objectsDeleted} objects deleted (${hour.deleteCompacted && !hour.compactedDeferred ? 'compacted objects' : 'raw objects and manifest; its compacted objects on a run 2 hours on'})\n`);
  }
  for (const id of run.erasures.finished) process.stdout.write(`erasure ${id}: done\n`);
  process.stdout.write(`${run.slicesSeen} hour(s) seen, ${run.compacted.length} changed, ${run.open} still open, ${run.failed.length} failed\n`);
  for (const failure of run.failed) process.stderr.write(`compact: ${failure.slice}: ${failure.error}\n`);
  if (run.retentionFailure) process.stderr.write(`compact: the retention sweep failed: ${run.retentionFailure}\n`);
  if (run.failed.length > 0 || run.retentionFailure) process.exitCode = 1;
}

main().catch((error: unknown) => reportFailure('compact', COMPACT_USAGE, error));
