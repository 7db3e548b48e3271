/**
 * `expireHour` on an in-memory bucket of placeholder objects (it lists and deletes, and reads nothing): which keys each
 * step deletes, in which order, and what it counts. The whole-hour tests (a compacted hour read through the views
 * after every delete) are in test/unit/retention/sweep-retention.test.ts.
 */
import { compactedObjectKey, manifestKey, partPlanKey } from '../../../lambda/lake/keys/compacted-keys.js';
import { indexKey } from '../../../lambda/lake/keys/erasure-keys.js';
import { landingObjectKey } from '../../../lambda/lake/keys/raw-keys.js';
import { expireHour } from '../../../lambda/lake/lifecycle/expire-hour.js';
import { MemoryBucket } from '../../../devkit/fakes/memory-bucket.js';

const HOUR = { orgId: 'org-a', dt: '2026-11-20', hour: '07' };
/** Hours whose keys share a prefix of the text of HOUR's, and another organization's same hour: never touched. */
const NEIGHBOURS = [
  { orgId: 'org-a', dt: '2026-11-20', hour: '08' },
  { orgId: 'org-ab', dt: '2026-11-20', hour: '07' },
  { orgId: 'org-a', dt: '2026-11-21', hour: '07' },
];

const raw = (slice = HOUR) => [landingObjectKey('traces', { ...slice, shardId: 's0', firstSequenceNumber: '1' }), landingObjectKey('spans', { ...slice, shardId: 's0', firstSequenceNumber: '1' })];
const compacted = (slice = HOUR) => [compactedObjectKey('traces', slice, 1), compactedObjectKey('spans', slice, 1)];
const plans = (slice = HOUR) => [partPlanKey(slice, 2, 'p1')];
const index = (slice = HOUR) => [indexKey(slice, 'traces'), indexKey(slice, 'spans')];

/** A bucket holding these keys (each body as many bytes as given, else 10) and every kind of object of the neighbour hours; its delete calls recorded. */
function bucketWith(keys: readonly string[], sizes: Record<string, number> = {}) {
  const bucket = new MemoryBucket();
  const neighbours = NEIGHBOURS.flatMap((slice) => [...raw(slice), manifestKey(slice), ...plans(slice), ...compacted(slice), ...index(slice)]);
  for (const key of [...keys, ...neighbours]) bucket.objects.set(key, { body: new Uint8Array(sizes[key] ?? 10), etag: key });
  const deletes: string[][] = [];
  const remove = bucket.delete.bind(bucket);
  bucket.delete = async (batch) => {
    deletes.push([...batch].sort());
    return remove(batch);
  };
  return { bucket, deletes, neighbours };
}

describe('expireHour, the first step (deleteCompacted false)', () => {
  it('deletes the raw objects, then the manifest, then the part plans, and keeps the compacted objects and the index', async () => {
    const keys = [...raw(), manifestKey(HOUR), ...plans(), ...compacted(), ...index()];
    const sizes = { [raw()[0]!]: 100, [raw()[1]!]: 200, [manifestKey(HOUR)]: 30, [plans()[0]!]: 4 };
    const { bucket, deletes, neighbours } = bucketWith(keys, sizes);
    const deletion = await expireHour(bucket, { slice: HOUR, deleteCompacted: false });
    expect(deletes).toEqual([raw().sort(), [manifestKey(HOUR)], plans()]);
    expect(deletion).toEqual({ slice: HOUR, deleteCompacted: false, objectsDeleted: 4, bytesDeleted: 334, compactedDeferred: false });
    expect(bucket.keys()).toEqual([...compacted(), ...index(), ...neighbours].sort());
  });

  // A part worker's switch after this step would write a manifest naming the raw objects just deleted: the hour
  // would come back (test/unit/lake/part-workers.test.ts runs that switch on a whole hour).
  it('deletes an hour\'s part plans even when it has no raw objects and no manifest left', async () => {
    const { bucket, deletes } = bucketWith([...plans(), partPlanKey(HOUR, 3, 'p2'), ...compacted()]);
    const deletion = await expireHour(bucket, { slice: HOUR, deleteCompacted: false });
    expect(deletes).toEqual([[...plans(), partPlanKey(HOUR, 3, 'p2')].sort()]);
    expect(deletion).toMatchObject({ objectsDeleted: 2, bytesDeleted: 20, compactedDeferred: false });
    expect(bucket.keys('compacted/plans/org_id=org-a/dt=2026-11-20/hour=07/')).toEqual([]);
  });

  it('sends no delete for a step that found nothing', async () => {
    const { bucket, deletes } = bucketWith([manifestKey(HOUR)]);
    expect(await expireHour(bucket, { slice: HOUR, deleteCompacted: false })).toMatchObject({ objectsDeleted: 1, bytesDeleted: 10 });
    expect(deletes).toEqual([[manifestKey(HOUR)]]);
    const empty = bucketWith([]);
    expect(await expireHour(empty.bucket, { slice: HOUR, deleteCompacted: false })).toEqual({ slice: HOUR, deleteCompacted: false, objectsDeleted: 0, bytesDeleted: 0, compactedDeferred: false });
    expect(empty.deletes).toEqual([]);
  });
});

describe('expireHour, the second step (deleteCompacted true)', () => {
  it('deletes the compacted objects and the index, in one delete after the others, of an hour with nothing else left', async () => {
    const { bucket, deletes, neighbours } = bucketWith([...plans(), ...compacted(), ...index()], { [compacted()[0]!]: 1000, [index()[1]!]: 7 });
    const deletion = await expireHour(bucket, { slice: HOUR, deleteCompacted: true });
    expect(deletes).toEqual([plans(), [...compacted(), ...index()].sort()]);
    expect(deletion).toEqual({ slice: HOUR, deleteCompacted: true, objectsDeleted: 5, bytesDeleted: 10 + 1000 + 10 + 10 + 7, compactedDeferred: false });
    expect(bucket.keys()).toEqual(neighbours.sort());
  });

  it.each([
    ['raw objects and a manifest', [...raw(), manifestKey(HOUR)]],
    ['raw objects alone (late data, not compacted yet)', raw()],
    ['one raw object', raw().slice(0, 1)],
    // The manifest came back (late data compacted since the first step) with fewer raw objects than manifests, or none.
    ['a manifest alone', [manifestKey(HOUR)]],
  ])('defers the compacted objects of an hour that has %s again, deleting those', async (_, live) => {
    const { bucket, deletes } = bucketWith([...live, ...compacted(), ...index()]);
    const deletion = await expireHour(bucket, { slice: HOUR, deleteCompacted: true });
    expect(deletion).toMatchObject({ compactedDeferred: true, objectsDeleted: live.length });
    expect(deletes.flat().sort()).toEqual([...live].sort());
    expect(bucket.keys('compacted/')).toEqual(expect.arrayContaining(compacted()));
    expect(bucket.keys('erasures/index/org_id=org-a/dt=2026-11-20/hour=07/')).toEqual(index().sort());
  });
});
