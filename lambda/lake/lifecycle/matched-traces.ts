import { parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import type { DatasetName } from '../../datasets/registry.js';
import { overflowDayPrefix, traceIdOfOverflowKey } from '../keys/overflow-keys.js';
import { LANDED_PARQUET_DECOMPRESSORS } from './parquet-rows.js';
import type { LakeStore, MatchFields, StoredObject } from '../ports.js';

/** The traces an erasure removes from a slice, and the days they were received on (where their overflow objects are). */
export interface MatchedTraces {
  traceIds: Set<string>;
  /** Per matched trace, the ids of the requests any of its rows matched: each request is told of the rows of its own traces. */
  requestsOf: Map<string, Set<string>>;
  /** `YYYY-MM-DD` of `received_at` of the matching rows: overflow keys carry that day. */
  receivedDays: Set<string>;
  /** Keys of the objects asked about (`holders`) that hold a row of a matched trace: raw objects to delete. */
  holders: Set<string>;
}

const MATCH_COLUMNS = ['trace_id', 'user_id', 'session_id', 'received_at'] as const;

const dayOfMicros = (micros: bigint) => new Date(Number(micros / 1000n)).toISOString().slice(0, 10);

/**
 * The traces with a matching row in these objects: a trace row or any one of its span rows matching is enough, and
 * then every row of that trace goes, in both datasets. Only the four columns matched on are read (Parquet is by
 * column), a row group at a time.
 */
export async function matchedTraces(
  store: LakeStore,
  objects: Record<DatasetName, readonly StoredObject[]>,
  matching: (row: MatchFields) => readonly string[],
  holders: ReadonlySet<string> = new Set(),
): Promise<MatchedTraces> {
  const found: MatchedTraces = { traceIds: new Set(), requestsOf: new Map(), receivedDays: new Set(), holders: new Set() };
  // The trace ids of each object asked about: which of them hold a matched trace is known only once all are read.
  const held = new Map<string, Set<string>>();
  for (const object of [...objects.traces, ...objects.spans]) {
    const ids = holders.has(object.key) ? new Set<string>() : undefined;
    if (ids) held.set(object.key, ids);
    const file = await store.open(object);
    const metadata = await parquetMetadataAsync(file);
    const present = new Set(metadata.schema.map((element) => element.name));
    const columns = MATCH_COLUMNS.filter((name) => present.has(name));
    let rowStart = 0;
    for (const group of metadata.row_groups) {
      const rowEnd = rowStart + Number(group.num_rows);
      const rows = (await parquetReadObjects({ file, metadata, columns, rowStart, rowEnd, compressors: LANDED_PARQUET_DECOMPRESSORS, parsers: { timestampFromMicroseconds: (micros: bigint) => micros } })) as Partial<Record<(typeof MATCH_COLUMNS)[number], unknown>>[];
      for (const row of rows) {
        const fields: MatchFields = {
          trace_id: String(row.trace_id ?? ''),
          user_id: typeof row.user_id === 'string' ? row.user_id : '',
          session_id: typeof row.session_id === 'string' ? row.session_id : '',
          received_at: typeof row.received_at === 'bigint' ? row.received_at : 0n,
        };
        ids?.add(fields.trace_id);
        const requests = matching(fields);
        if (requests.length === 0) continue;
        found.traceIds.add(fields.trace_id);
        const of = found.requestsOf.get(fields.trace_id) ?? new Set<string>();
        for (const id of requests) of.add(id);
        found.requestsOf.set(fields.trace_id, of);
        found.receivedDays.add(dayOfMicros(fields.received_at));
      }
      rowStart = rowEnd;
    }
  }
  for (const [key, ids] of held) if ([...ids].some((id) => found.traceIds.has(id))) found.holders.add(key);
  return found;
}

/**
 * Deletes the overflow objects of the matched traces (`overflow/org_id=…/dt=<received day>/<request>/<index>-<trace>.json.gz`):
 * one listing per day they were received on. Returns how many were deleted.
 */
export async function deleteOverflowOf(store: LakeStore, orgId: string, matched: MatchedTraces): Promise<number> {
  const doomed: string[] = [];
  for (const day of matched.receivedDays) {
    for (const object of await store.list(overflowDayPrefix(orgId, day))) {
      const traceId = traceIdOfOverflowKey(object.key);
      if (traceId !== undefined && matched.traceIds.has(traceId)) doomed.push(object.key);
    }
  }
  if (doomed.length > 0) await store.delete(doomed);
  return doomed.length;
}
