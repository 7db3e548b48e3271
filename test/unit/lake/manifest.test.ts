import { type Slice, compactedObjectKey, compactedSlicePrefix, generationOfCompactedKey, manifestKey, partObjectKey, partPlanKey, partPlanPrefix, sliceId, sliceOfManifestKey, sliceStartMillis } from '../../../lambda/lake/keys/compacted-keys.js';
import { sliceOfRawKey } from '../../../lambda/lake/keys/raw-keys.js';
import { InvalidManifestError, type SliceManifest, nextManifest, parseManifest, serializeManifest } from '../../../lambda/lake/manifest.js';

// The manifest is the one object whose PUT switches a slice's readers: what it names, and what a stored one must be
// to be believed, decide which rows every query sees.

const SLICE: Slice = { orgId: 'org-a', dt: '2026-11-22', hour: '10' };
const NOW = new Date('2026-11-23T12:00:00Z');

const dataset = (files: string[], rows: number) => ({ files, rows, covered: [{ key: `traces/${files[0] ?? 'none'}`, etag: '"e1"' }] });

function manifest(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    version: 1,
    org_id: SLICE.orgId,
    dt: SLICE.dt,
    hour: SLICE.hour,
    generation: 3,
    compacted_at: NOW.toISOString(),
    traces: dataset(['t3.parquet'], 5),
    spans: dataset(['s3.parquet'], 9),
    superseded: [{ generation: 2, superseded_at: NOW.toISOString(), files: ['t2.parquet'] }],
    ...overrides,
  };
}

const bytes = (value: unknown) => Buffer.from(JSON.stringify(value));

describe('the slice manifest', () => {
  it('reads back what it wrote, one JSON line', () => {
    const written = nextManifest(SLICE, 3, { traces: dataset(['t3.parquet'], 5), spans: dataset(['s3.parquet'], 9) }, undefined, { kept: [], replaced: [] }, NOW);
    const serialized = serializeManifest(written);
    const text = Buffer.from(serialized).toString('utf8');
    expect(text.endsWith('}\n')).toBe(true);
    expect(text.indexOf('\n')).toBe(text.length - 1);
    expect(parseManifest(serialized, SLICE)).toEqual(written);
    expect(written).toEqual({
      version: 1,
      org_id: 'org-a',
      dt: '2026-11-22',
      hour: '10',
      generation: 3,
      compacted_at: '2026-11-23T12:00:00.000Z',
      traces: dataset(['t3.parquet'], 5),
      spans: dataset(['s3.parquet'], 9),
      superseded: [],
    });
  });

  it('keeps the previous generation for readers in flight only when objects were replaced, after the ones still kept', () => {
    const previous = parseManifest(bytes(manifest()), SLICE);
    const kept = [{ generation: 1, superseded_at: '2026-11-23T11:00:00.000Z', files: ['t1.parquet'] }];
    const next = nextManifest(SLICE, 4, { traces: dataset(['t4.parquet'], 5), spans: dataset(['s4.parquet'], 9) }, previous, { kept, replaced: ['t3.parquet', 's3.parquet'] }, NOW);
    expect(next.superseded).toEqual([...kept, { generation: 3, superseded_at: '2026-11-23T12:00:00.000Z', files: ['t3.parquet', 's3.parquet'] }]);
    expect(kept).toHaveLength(1); // the caller's list is not changed
    // Nothing replaced (a dataset carried over): no empty entry.
    expect(nextManifest(SLICE, 4, next, previous, { kept, replaced: [] }, NOW).superseded).toEqual(kept);
    // No previous manifest: nothing to supersede, whatever is said to be replaced.
    expect(nextManifest(SLICE, 1, next, undefined, { kept: [], replaced: ['x.parquet'] }, NOW).superseded).toEqual([]);
  });

  it('drops superseded entries without a file list, and reads a missing list as none', () => {
    const parsed = parseManifest(bytes(manifest({ superseded: [{ generation: 1, files: ['a'] }, { generation: 2 }, null, { generation: 3, files: [1] }] })), SLICE);
    expect(parsed.superseded).toEqual([{ generation: 1, files: ['a'] }]);
    expect(parseManifest(bytes(manifest({ superseded: undefined })), SLICE).superseded).toEqual([]);
    expect(parseManifest(bytes(manifest({ superseded: 'all' })), SLICE).superseded).toEqual([]);
  });

  it.each<[string, Record<string, unknown>]>([
    ['another version', { version: 2 }],
    ['no version', { version: undefined }],
    ['another organization', { org_id: 'org-b' }],
    ['another day', { dt: '2026-11-21' }],
    ['another hour', { hour: '11' }],
    ['a generation that is not an integer', { generation: 1.5 }],
    ['a generation as text', { generation: '3' }],
    ['no generation', { generation: undefined }],
  ])('refuses a manifest with %s', (_, overrides) => {
    expect(() => parseManifest(bytes(manifest(overrides)), SLICE)).toThrow(new InvalidManifestError('manifest of org-a/2026-11-22/10 has another version or slice'));
  });

  it('refuses bytes that are not JSON, keeping the parser error as the cause', () => {
    const error = (() => {
      try {
        parseManifest(Buffer.from('{"version":1,'), SLICE);
      } catch (caught) {
        return caught as InvalidManifestError;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(InvalidManifestError);
    expect(error?.message).toBe('manifest of org-a/2026-11-22/10 is not JSON');
    expect(error?.name).toBe('InvalidManifestError');
    expect(error?.cause).toBeInstanceOf(SyntaxError);
  });

  it.each<[string, unknown]>([
    ['missing', undefined],
    ['null', null],
    ['files not a list', { files: 'a', rows: 1, covered: [] }],
    ['a file that is not a string', { files: ['a', 2], rows: 1, covered: [] }],
    ['rows not a number', { files: [], rows: '1', covered: [] }],
    ['covered not a list', { files: [], rows: 1, covered: {} }],
    ['a covered entry without a key', { files: [], rows: 1, covered: [{ etag: '"e"' }] }],
    ['a covered entry without an etag', { files: [], rows: 1, covered: [{ key: 'k' }] }],
    ['a covered entry that is null', { files: [], rows: 1, covered: [null] }],
  ])('refuses a dataset with %s, naming the dataset', (_, spans) => {
    expect(() => parseManifest(bytes(manifest({ spans })), SLICE)).toThrow(new InvalidManifestError('manifest: spans must have files, rows and covered'));
    expect(() => parseManifest(bytes(manifest({ traces: spans })), SLICE)).toThrow(new InvalidManifestError('manifest: traces must have files, rows and covered'));
  });

  it('keeps only the fields of a dataset it knows', () => {
    const parsed = parseManifest(bytes(manifest({ traces: { ...dataset(['t'], 1), extra: true } })), SLICE);
    expect(parsed.traces).toEqual(dataset(['t'], 1));
    const empty: SliceManifest['traces'] = { files: [], rows: 0, covered: [] };
    expect(parseManifest(bytes(manifest({ spans: empty })), SLICE).spans).toEqual(empty);
  });
});

describe('compaction keys', () => {
  it('names each object of a slice under its own prefix', () => {
    expect(compactedSlicePrefix('spans', SLICE)).toBe('compacted/spans/org_id=org-a/dt=2026-11-22/hour=10/');
    expect(compactedObjectKey('traces', SLICE, 7)).toBe('compacted/traces/org_id=org-a/dt=2026-11-22/hour=10/g000007.parquet');
    expect(partObjectKey('spans', SLICE, 12, 'p1', 2, 4)).toBe('compacted/spans/org_id=org-a/dt=2026-11-22/hour=10/g000012-p1-part-2-of-4.parquet');
    expect(partPlanPrefix(SLICE)).toBe('compacted/plans/org_id=org-a/dt=2026-11-22/hour=10/');
    expect(partPlanKey(SLICE, 3, 'p1')).toBe('compacted/plans/org_id=org-a/dt=2026-11-22/hour=10/g000003-p1.json');
    expect(manifestKey(SLICE)).toBe('manifests/org_id=org-a/dt=2026-11-22/hour=10/manifest.json');
    expect(sliceId(SLICE)).toBe('org-a/2026-11-22/10');
    expect(sliceStartMillis(SLICE)).toBe(Date.parse('2026-11-22T10:00:00Z'));
  });

  it('reads the generation of every compacted key form, and of nothing else', () => {
    expect(generationOfCompactedKey(compactedObjectKey('traces', SLICE, 7))).toBe(7);
    expect(generationOfCompactedKey(partObjectKey('spans', SLICE, 12, 'p1', 2, 4))).toBe(12);
    expect(generationOfCompactedKey(partPlanKey(SLICE, 3, 'p1'))).toBe(3);
    expect(generationOfCompactedKey('compacted/traces/org_id=a/dt=2026-11-22/hour=10/g000002-part-0-of-2.parquet')).toBe(2);
    for (const key of [
      'compacted/traces/org_id=a/dt=2026-11-22/hour=10/g.parquet',
      'compacted/traces/org_id=a/dt=2026-11-22/hour=10/x000002.parquet',
      'compacted/traces/org_id=a/dt=2026-11-22/hour=10/g000002.csv',
      'compacted/traces/org_id=a/dt=2026-11-22/hour=10/g000002.parquet.tmp',
      'compacted/traces/g000002/other.parquet',
      'compacted/traces/org_id=a/dt=2026-11-22/hour=10/g000002-x/y.parquet',
    ]) {
      expect([key, generationOfCompactedKey(key)]).toEqual([key, undefined]);
    }
  });

  it('reads the slice of a manifest key and of a raw key, and of no other key', () => {
    expect(sliceOfManifestKey(manifestKey(SLICE))).toEqual(SLICE);
    expect(sliceOfRawKey('traces/org_id=org-a/dt=2026-11-22/hour=10/shard-1.parquet')).toEqual(SLICE);
    expect(sliceOfRawKey('spans/org_id=org-a/dt=2026-11-22/hour=10/shard-1.parquet')).toEqual(SLICE);
    for (const key of [
      `x${manifestKey(SLICE)}`,
      `${manifestKey(SLICE)}.bak`,
      'manifests/org_id=org-a/dt=2026-11-2/hour=10/manifest.json',
      'manifests/org_id=org-a/dt=2026-11-22/hour=1/manifest.json',
      'manifests/org_id=/dt=2026-11-22/hour=10/manifest.json',
      'manifests/org_id=a/b/dt=2026-11-22/hour=10/manifest.json',
    ]) {
      expect([key, sliceOfManifestKey(key)]).toEqual([key, undefined]);
    }
    for (const key of [
      'compacted/traces/org_id=org-a/dt=2026-11-22/hour=10/g000001.parquet',
      'overflow/org_id=org-a/dt=2026-11-22/hour=10/shard-1.parquet',
      'traces/org_id=org-a/dt=2026-11-22/hour=10/shard-1.json',
      'traces/org_id=org-a/dt=2026-11-22/hour=10/shard-1.parquet.tmp',
      'traces/org_id=org-a/dt=2026-11-22/hour=10/a/shard-1.parquet',
      'traces/org_id=org-a/dt=2026-11-22/hour=100/shard-1.parquet',
      'traces/org_id=org-a/dt=2026-11-22x/hour=10/shard-1.parquet',
      'traces/org_id=/dt=2026-11-22/hour=10/shard-1.parquet',
    ]) {
      expect([key, sliceOfRawKey(key)]).toEqual([key, undefined]);
    }
  });
});

describe("a manifest's erasure record", () => {
  const RAW = 'traces/org_id=org-a/dt=2026-11-22/hour=10/shardId-000000000000-49640000000000000000000000000000000000000000000000000001.parquet';
  const record = (overrides: Record<string, unknown> = {}) => ({ rows_removed: { 'er-1': 6, 'er-2': 0 }, bytes_rewritten: 10, bytes_of_hour: 20, objects_deleted: 3, raw_holders: [RAW], ...overrides });

  it('reads back the record a rewrite applying requests wrote, and a manifest without one as none', () => {
    const written: SliceManifest = { ...(manifest() as unknown as SliceManifest), erasure: record() };
    expect(parseManifest(serializeManifest(written), SLICE).erasure).toEqual(record());
    expect(parseManifest(bytes(manifest()), SLICE)).not.toHaveProperty('erasure');
  });

  it.each<[string, unknown]>([
    ['null', null],
    ['rows per request not an object', record({ rows_removed: [6] })],
    ['rows per request null', record({ rows_removed: null })],
    ['a negative row count', record({ rows_removed: { 'er-1': -1 } })],
    ['a byte count that is not a number', record({ bytes_rewritten: '10' })],
    ['raw holders not a list', record({ raw_holders: RAW })],
    // Its raw holders are deleted: a key of another hour, or no raw key at all, is never acted on.
    ['a raw holder of another hour', record({ raw_holders: [RAW.replace('hour=10', 'hour=11')] })],
    ['a holder that is no raw key', record({ raw_holders: ['manifests/org_id=org-a/dt=2026-11-22/hour=10/manifest.json'] })],
  ])('refuses a record with %s', (_, erasure) => {
    expect(() => parseManifest(bytes(manifest({ erasure })), SLICE)).toThrow(
      new InvalidManifestError('manifest of org-a/2026-11-22/10: erasure must have rows_removed per request, byte and object counts, and raw keys of the slice'),
    );
  });
});
