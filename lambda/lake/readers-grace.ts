/**
 * How long an object no reader is sent to any more stays in the bucket for queries that started before: a
 * generation replaced by a compaction switch, and an expired hour's compacted objects after its manifest is
 * deleted. Longer than Athena's longest DML query (30 min by default, the workgroup's limit) and any local query,
 * so a query that read a manifest finds every object it names. One value for both, so the two cannot drift apart.
 */
export const READERS_GRACE_MS = 2 * 60 * 60 * 1000;
