/**
 * Every key of the data bucket, written and parsed in lambda/lake/keys/: each builder's key parses back to what built
 * it, and a literal key of today's form (as objects already in deployed buckets are named) parses too, so a change
 * of format fails here instead of stranding the objects written before it.
 */
import { compactedObjectKey, generationOfCompactedKey, manifestKey, partObjectKey, partPlanKey, sliceOfManifestKey } from '../../../lambda/lake/keys/compacted-keys.js';
import { hourOf, hourOfIndexKey, indexKey, outcomeKey, requestKey, requestOfKey } from '../../../lambda/lake/keys/erasure-keys.js';
import { firstKeptDayKey, firstKeptHourKey, sliceOfHourKey } from '../../../lambda/lake/keys/hour-prefixes.js';
import { overflowDayPrefix, overflowObjectKey, traceIdOfOverflowKey } from '../../../lambda/lake/keys/overflow-keys.js';
import { partitionPath, rawPartitionPrefix } from '../../../lambda/lake/keys/partition.js';
import { deadLetterObjectKey, landingObjectKey, sliceOfRawKey } from '../../../lambda/lake/keys/raw-keys.js';

const HOUR = { orgId: 'org-a', dt: '2026-12-07', hour: '05' };
const TRACE = '0c6c2a5e-6a39-4f4a-9b8e-3f1d2c4b5a69';

describe('the keys of the data bucket', () => {
  it('the raw objects of an hour: built, parsed back, and today literal form', () => {
    const key = landingObjectKey('spans', { ...HOUR, shardId: 'shardId-000000000001', firstSequenceNumber: '49590338271490256608559692538361571095921575989136588898' });
    expect(key).toBe('spans/org_id=org-a/dt=2026-12-07/hour=05/shardId-000000000001-49590338271490256608559692538361571095921575989136588898.parquet');
    expect(sliceOfRawKey(key)).toEqual(HOUR);
    expect(sliceOfRawKey('traces/org_id=org-b/dt=2025-01-31/hour=23/shardId-000000000000-1.parquet')).toEqual({ orgId: 'org-b', dt: '2025-01-31', hour: '23' });
    expect(rawPartitionPrefix('traces', HOUR)).toBe(`traces/${partitionPath(HOUR)}`);
    // Not raw: a compacted object shares the hour path, and a manifest or a non-Parquet object is no raw object.
    expect(sliceOfRawKey(compactedObjectKey('traces', HOUR, 1))).toBeUndefined();
    expect(sliceOfRawKey('traces/org_id=org-a/dt=2026-12-07/hour=05/x.json')).toBeUndefined();
  });

  it('dead letters: one per record, by the day it arrived', () => {
    expect(deadLetterObjectKey('shardId-000000000002', '4959', new Date('2026-12-07T23:59:59.999Z'))).toBe('dead-letter/dt=2026-12-07/shardId-000000000002-4959.json');
  });

  it('compacted objects, part objects and part plans carry their generation', () => {
    expect(compactedObjectKey('traces', HOUR, 3)).toBe('compacted/traces/org_id=org-a/dt=2026-12-07/hour=05/g000003.parquet');
    expect(generationOfCompactedKey(compactedObjectKey('spans', HOUR, 1234567))).toBe(1234567);
    const part = partObjectKey('spans', HOUR, 4, 'p1a2b3', 2, 8);
    expect(part).toBe('compacted/spans/org_id=org-a/dt=2026-12-07/hour=05/g000004-p1a2b3-part-2-of-8.parquet');
    expect(generationOfCompactedKey(part)).toBe(4);
    const plan = partPlanKey(HOUR, 5, 'p9');
    expect(plan).toBe('compacted/plans/org_id=org-a/dt=2026-12-07/hour=05/g000005-p9.json');
    expect(generationOfCompactedKey(plan)).toBe(5);
    // Objects of older releases, several per generation, stay readable.
    expect(generationOfCompactedKey('compacted/traces/org_id=org-a/dt=2026-12-07/hour=05/g000002-part-1-of-3.parquet')).toBe(2);
    expect(generationOfCompactedKey('compacted/traces/org_id=org-a/dt=2026-12-07/hour=05/manifest.parquet')).toBeUndefined();
  });

  it('the manifest of an hour', () => {
    expect(manifestKey(HOUR)).toBe('manifests/org_id=org-a/dt=2026-12-07/hour=05/manifest.json');
    expect(sliceOfManifestKey(manifestKey(HOUR))).toEqual(HOUR);
    expect(sliceOfManifestKey('manifests/org_id=org-b/dt=2025-01-31/hour=00/manifest.json')).toEqual({ orgId: 'org-b', dt: '2025-01-31', hour: '00' });
    expect(sliceOfManifestKey('manifests/org_id=org-b/dt=2025-01-31/hour=00/other.json')).toBeUndefined();
  });

  it('overflow objects, by the day received, for every index of the batch (two digits and more)', () => {
    const context = { org_id: 'org-a', received_at: '2026-12-07T05:06:07.123Z', request_id: 'req_0b1c' };
    for (const index of [0, 9, 10, 11, 99, 100]) {
      const key = overflowObjectKey(context, index, TRACE);
      expect(key).toBe(`overflow/org_id=org-a/dt=2026-12-07/req_0b1c/${index}-${TRACE}.json.gz`);
      expect(key.startsWith(overflowDayPrefix('org-a', '2026-12-07'))).toBe(true);
      expect(traceIdOfOverflowKey(key)).toBe(TRACE);
    }
    expect(traceIdOfOverflowKey(`overflow/org_id=org-b/dt=2025-01-31/req_1/11-${TRACE}.json.gz`)).toBe(TRACE);
    // Another prefix's object with the same tail is not an overflow object.
    expect(traceIdOfOverflowKey(`dead-letter/org_id=org-b/dt=2025-01-31/req_1/11-${TRACE}.json.gz`)).toBeUndefined();
    // Parsed whole: a copy under another root, or a key with more after it, is not an overflow object either.
    expect(traceIdOfOverflowKey(`backup/overflow/org_id=org-b/dt=2025-01-31/req_1/11-${TRACE}.json.gz`)).toBeUndefined();
    expect(traceIdOfOverflowKey(`overflow/org_id=org-b/dt=2025-01-31/req_1/11-${TRACE}.json.gz.tmp`)).toBeUndefined();
  });

  it('erasure requests, outcomes and the hour index', () => {
    expect(requestKey('org-a', 'er_1f')).toBe('erasures/requests/org_id=org-a/er_1f.json');
    expect(requestOfKey(requestKey('org-a', 'er_1f'))).toEqual({ orgId: 'org-a', erasureId: 'er_1f' });
    expect(requestOfKey('erasures/requests/org_id=org-b/er_00.json')).toEqual({ orgId: 'org-b', erasureId: 'er_00' });
    expect(requestOfKey('erasures/outcomes/org_id=org-b/er_00/2026-12-07T05.json')).toBeUndefined();
    expect(outcomeKey('org-a', 'er_1f', hourOf(HOUR))).toBe('erasures/outcomes/org_id=org-a/er_1f/2026-12-07T05.json');
    expect(indexKey(HOUR, 'traces')).toBe('erasures/index/org_id=org-a/dt=2026-12-07/hour=05/traces.json');
    expect(hourOfIndexKey(indexKey(HOUR, 'spans'))).toBe('2026-12-07/05');
    expect(hourOfIndexKey('erasures/index/org_id=org-b/dt=2025-01-31/hour=23/traces.json')).toBe('2025-01-31/23');
    expect(hourOfIndexKey('erasures/requests/org_id=org-b/dt=2025-01-31/hour=23/traces.json')).toBeUndefined();
    // Parsed whole, as the overflow keys are.
    expect(requestOfKey('backup/erasures/requests/org_id=org-b/er_00.json')).toBeUndefined();
    expect(requestOfKey('erasures/requests/org_id=org-b/er_00.json.tmp')).toBeUndefined();
    expect(hourOfIndexKey('backup/erasures/index/org_id=org-b/dt=2025-01-31/hour=23/traces.json')).toBeUndefined();
    expect(hourOfIndexKey('erasures/index/org_id=org-b/dt=2025-01-31/hour=23/traces.json.tmp')).toBeUndefined();
  });

  it('every key under an hour names that hour, and the retention bounds sort as the hours do', () => {
    for (const key of [landingObjectKey('traces', { ...HOUR, shardId: 's', firstSequenceNumber: '1' }), compactedObjectKey('spans', HOUR, 1), partPlanKey(HOUR, 1, 'p'), manifestKey(HOUR), indexKey(HOUR, 'traces')]) {
      expect(sliceOfHourKey(key)).toEqual(HOUR);
    }
    // The first kept hour is the first to end after the cutoff: at 05:30 the hour 05 (it ends at 06:00); at 06:00, 06.
    expect(firstKeptHourKey('traces/', 'org-a', new Date('2026-12-07T05:30:00Z'))).toBe('traces/org_id=org-a/dt=2026-12-07/hour=05/');
    expect(firstKeptHourKey('traces/', 'org-a', new Date('2026-12-07T06:00:00Z'))).toBe('traces/org_id=org-a/dt=2026-12-07/hour=06/');
    expect(firstKeptDayKey('overflow/', 'org-a', new Date('2026-12-07T05:30:00Z'))).toBe('overflow/org_id=org-a/dt=2026-12-07/');
    expect(compactedObjectKey('traces', HOUR, 1) < firstKeptHourKey('compacted/traces/', 'org-a', new Date('2026-12-07T06:00:00Z'))).toBe(true);
  });
});
