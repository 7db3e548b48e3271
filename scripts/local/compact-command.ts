import { defineCommand, parseCommandLine } from '../cli/command-line.js';
import { compactLocal } from '../../devkit/local-stack/local-compaction.js';
import { COMPACT_USAGE } from './usage.js';
import { localPaths, readLocalEndpoints } from '../../devkit/local-stack/local-state.js';

/**
 * `npm run compact`: deletes the hours past their organizations' retention, then compacts everything pending in the running local stack's bucket now, open hours
 * included (the timer of `npm start` waits for an hour to close). Prints one line per compacted hour; exit status 1
 * when an hour or the retention sweep failed.
 */
export const compactCommand = defineCommand({ name: 'compact', usage: COMPACT_USAGE }, async (argv, out) => {
  const parsed = parseCommandLine(argv, { 'closed-only': { type: 'boolean', default: false } }, COMPACT_USAGE, out);
  if (!parsed) return 0;
  const { values } = parsed;
  const paths = localPaths();
  const run = await compactLocal(readLocalEndpoints(paths), paths, { includeOpenHours: !values['closed-only'] });
  for (const c of run.compacted) {
    const slice = `${c.slice.orgId}/${c.slice.dt}/${c.slice.hour}`;
    out.stdout.write(
      c.outcome === 'compacted'
        ? `${slice}: generation ${c.generation}, ${c.rows.traces} traces, ${c.rows.spans} spans, ${c.duplicatesDropped} duplicate rows dropped${c.rowsErased ? `, ${c.rowsErased} rows erased` : ''}\n`
        : `${slice}: deleted ${c.objectsDeleted} objects of replaced generations\n`,
    );
  }
  for (const hour of run.retention?.deleted ?? []) {
    out.stdout.write(`${hour.slice.orgId}/${hour.slice.dt}/${hour.slice.hour}: past retention, ${hour.objectsDeleted} objects deleted (${hour.deleteCompacted && !hour.compactedDeferred ? 'compacted objects' : 'raw objects and manifest; its compacted objects on a run 2 hours on'})\n`);
  }
  for (const id of run.erasures.finished) out.stdout.write(`erasure ${id}: done\n`);
  out.stdout.write(`${run.slicesSeen} hour(s) seen, ${run.compacted.length} changed, ${run.open} still open, ${run.failed.length} failed\n`);
  for (const failure of run.failed) out.stderr.write(`compact: ${failure.slice}: ${failure.error}\n`);
  if (run.retentionFailure) out.stderr.write(`compact: the retention sweep failed: ${run.retentionFailure}\n`);
  return run.failed.length > 0 || run.retentionFailure ? 1 : 0;
});
