import { createHash } from 'node:crypto';
import type { DatasetName } from '../datasets/registry.js';
import { type Slice, manifestKey, sliceId, sliceStartMillis } from '../lake/keys/compacted-keys.js';
import { sliceOfRawKey } from '../lake/keys/raw-keys.js';
import { type SliceCompaction, compactSlice, sliceWork } from '../lake/lifecycle/compact-slice.js';
import { READERS_GRACE_MS } from '../lake/readers-grace.js';
import type { CompactionDeps, StoredObject } from '../lake/ports.js';
import { type SliceManifest, parseManifest } from '../lake/manifest.js';
import { settleLimited } from '../shared/runtime/limited.js';

const HOUR_MS = 60 * 60 * 1000;

/** Time after an hour ends before it counts as closed: the landing's batching window and retries, with room. */
export const DEFAULT_SETTLE_MS = 10 * 60 * 1000;

/** Manifests read at once while looking for pending slices: one GET per closed slice with raw objects. */
export const MANIFEST_READS_IN_PARALLEL = 16;

/** Organizations listed at once when they are listed apart: each holds its raw listing until its slices are looked at. */
export const ORGANIZATIONS_LISTED_IN_PARALLEL = 4;

/** The organizations that have raw objects, so that each can be listed on its own. */
export interface RawOrganizations {
  /** Ids of the organizations with objects under `traces/org_id=<id>/` or `spans/org_id=<id>/`. */
  list(): Promise<string[]>;
}

export interface FindPendingDeps extends CompactionDeps {
  /**
   * When given, the raw prefixes are listed one organization at a time (a few at once), so that memory holds
   * the listing of a few organizations, not of all, and the listing time is shared; else in one listing.
   */
  organizations?: RawOrganizations;
}

export interface PendingOptions {
  /** Compact hours that are still open too (`npm run compact`); the schedule compacts closed hours only. */
  includeOpenHours?: boolean;
  settleMs?: number;
}

export interface FindPendingOptions extends PendingOptions {
  /**
   * Called with the pending slices of each part of the listing (an organization, or everything) as soon as that
   * part is looked at: the planner sends them before listing the next organizations. The scan keeps none of them,
   * so memory holds the raw listings of the organizations being looked at, not of every pending slice.
   */
  onPending: (slices: readonly PendingSlice[]) => Promise<void>;
}

/** Why a slice needs a compaction run. */
export type PendingReason =
  /** Raw objects and no manifest yet. */
  | 'new'
  /** Raw objects the manifest does not cover, or covers with another ETag (late data, replays, retried batches). */
  | 'uncovered'
  /** Nothing new, but a replaced generation is past its grace period and can be deleted. */
  | 'cleanup'
  /** The manifest could not be read or parsed: compaction is left to fail and report it. */
  | 'unreadable-manifest'
  /** An open erasure request needs the hour rewritten (sent by the planner's erasure step, never by the scan). */
  | 'erasure';

/** A slice with work to do, as the listing and its manifest showed it. */
export interface PendingSlice {
  slice: Slice;
  reason: PendingReason;
  /** The slice's raw objects as listed. */
  raw: Record<DatasetName, StoredObject[]>;
  /** The slice's manifest as read, if it has one. */
  manifest?: SliceManifest;
  /**
   * SHA-256 of the slice and the work seen (uncovered raw objects with their ETags, expired generations): equal
   * for two looks at the same pending state, different once anything new lands.
   */
  fingerprint: string;
}

export interface PendingScan {
  /** Slices with raw objects in the listing. */
  slicesSeen: number;
  /** Slices skipped because their hour is not closed yet. */
  open: number;
}

export interface CompactionRun {
  slicesSeen: number;
  compacted: SliceCompaction[];
  /** Slices skipped because their hour is not closed yet. */
  open: number;
  failed: { slice: string; error: string }[];
}

type RawListing = Map<string, { slice: Slice; raw: Record<DatasetName, StoredObject[]> }>;

/**
 * Raw objects of every slice under `<dataset>/<under>`, from one listing of each raw prefix. Raw objects expire
 * a few days after they land (see "Retention" in docs/landing.md), so the listing is bounded by the traffic of
 * those days.
 */
async function rawSlices(deps: CompactionDeps, under: string): Promise<RawListing> {
  const slices: RawListing = new Map();
  for (const dataset of ['traces', 'spans'] as const) {
    for (const object of await deps.store.list(`${dataset}/${under}`)) {
      const slice = sliceOfRawKey(object.key);
      if (!slice) continue;
      const id = sliceId(slice);
      const entry = slices.get(id) ?? { slice, raw: { traces: [], spans: [] } };
      entry.raw[dataset].push(object);
      slices.set(id, entry);
    }
  }
  return slices;
}

/**
 * Runs `work` over `items` with at most `limit` calls in flight, results in input order. After a failure no new
 * item is started, the calls in flight are waited for, and the first failure is thrown: nothing runs on after
 * the caller has its answer.
 */
async function mapLimited<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const settled = await settleLimited(items, limit, work, { stopOnFailure: true });
  const failure = settled.find((result): result is PromiseRejectedResult => result?.status === 'rejected');
  if (failure) throw failure.reason;
  return settled.map((result) => (result as PromiseFulfilledResult<R>).value);
}

/** What a slice's manifest leaves to do, or undefined when the slice is up to date. */
function workOf(manifest: SliceManifest | undefined, raw: Record<DatasetName, StoredObject[]>, now: number, graceMs: number): { reason: PendingReason; seen: string[] } | undefined {
  const { pending, expired } = sliceWork(manifest, raw, now, graceMs);
  const uncovered = (['traces', 'spans'] as const).flatMap((dataset) => pending[dataset].map((object) => `${dataset} ${object.key} ${object.etag}`));
  if (!manifest) return { reason: 'new', seen: uncovered };
  if (uncovered.length > 0) return { reason: 'uncovered', seen: uncovered };
  return expired.length > 0 ? { reason: 'cleanup', seen: expired.map((entry) => `generation ${entry.generation}`) } : undefined;
}

/**
 * Finds the slices that need a compaction run: a listing of the raw prefixes (whole, or one organization at a
 * time), then the manifest of every closed slice in it. A slice is pending when it has raw objects its manifest
 * does not cover (new slices, late data, replays, overwritten raw objects), a replaced generation past its grace
 * period, or a manifest that cannot be read (so that compaction fails on it and reports it, instead of the slice
 * being silently skipped). Pending slices are handed to `options.onPending`, a part of the listing at a time.
 */
export async function findPendingSlices(deps: FindPendingDeps, options: FindPendingOptions): Promise<PendingScan> {
  const now = (deps.now ?? (() => new Date()))().getTime();
  const settle = options.settleMs ?? DEFAULT_SETTLE_MS;
  const graceMs = deps.supersededGraceMs ?? READERS_GRACE_MS;
  const scan: PendingScan = { slicesSeen: 0, open: 0 };
  const scanUnder = async (under: string): Promise<void> => {
    const slices = [...(await rawSlices(deps, under)).values()];
    const closed = slices.filter(({ slice }) => options.includeOpenHours || sliceStartMillis(slice) + HOUR_MS + settle <= now);
    const looks = await mapLimited(closed, MANIFEST_READS_IN_PARALLEL, async ({ slice, raw }): Promise<PendingSlice | undefined> => {
      let work: ReturnType<typeof workOf>;
      let manifest: SliceManifest | undefined;
      try {
        const bytes = await deps.store.get(manifestKey(slice));
        manifest = bytes ? parseManifest(bytes, slice) : undefined;
        work = workOf(manifest, raw, now, graceMs);
      } catch (error) {
        work = { reason: 'unreadable-manifest', seen: [(error as Error).message ?? String(error)] };
      }
      if (!work) return undefined;
      const fingerprint = createHash('sha256').update([sliceId(slice), work.reason, ...work.seen.sort()].join('\n')).digest('hex');
      return { slice, reason: work.reason, raw, fingerprint, ...(manifest ? { manifest } : {}) };
    });
    const pending = looks.filter((look): look is PendingSlice => look !== undefined);
    if (pending.length > 0) await options.onPending(pending);
    scan.slicesSeen += slices.length;
    scan.open += slices.length - closed.length;
  };
  if (deps.organizations) {
    await mapLimited(await deps.organizations.list(), ORGANIZATIONS_LISTED_IN_PARALLEL, (orgId) => scanUnder(`org_id=${orgId}/`));
  } else {
    await scanUnder('');
  }
  return scan;
}

/**
 * Compacts one slice and logs the outcome; a failure is returned, not thrown, so that a caller going through
 * many slices goes on with the others. The slice stays on its raw objects, readable, until a later run succeeds.
 */
export async function compactOneSlice(
  deps: CompactionDeps,
  slice: Slice,
  raw?: Record<DatasetName, StoredObject[]>,
): Promise<{ ok: true; result: SliceCompaction } | { ok: false; error: string }> {
  try {
    const result = await compactSlice(deps, slice, raw);
    if (result.outcome !== 'up-to-date') deps.logger?.info('Compacted a slice', { ...result, slice: sliceId(slice) });
    return { ok: true, result };
  } catch (error) {
    deps.logger?.error('Compaction of a slice failed; it stays on its raw objects until a later run succeeds', { slice: sliceId(slice), error });
    return { ok: false, error: (error as Error).message ?? String(error) };
  }
}

/**
 * Compacts every pending slice in this process, one after another: `npm run compact`, the timer of `npm start`
 * and the tests. Deployed, the planner sends the same pending slices to a queue and workers compact them.
 */
export async function compactPending(deps: CompactionDeps, options: PendingOptions = {}): Promise<CompactionRun> {
  const pending: PendingSlice[] = [];
  const scan = await findPendingSlices(deps, { ...options, onPending: async (slices) => void pending.push(...slices) });
  pending.sort((a, b) => (sliceId(a.slice) < sliceId(b.slice) ? -1 : 1));
  const run: CompactionRun = { slicesSeen: scan.slicesSeen, compacted: [], open: scan.open, failed: [] };
  for (const { slice, raw } of pending) {
    const outcome = await compactOneSlice(deps, slice, raw);
    if (!outcome.ok) run.failed.push({ slice: sliceId(slice), error: outcome.error });
    else if (outcome.result.outcome !== 'up-to-date') run.compacted.push(outcome.result);
  }
  return run;
}
