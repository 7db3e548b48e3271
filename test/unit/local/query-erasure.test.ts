import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { compactPending } from '../../../lambda/compaction/compact-pending.js';
import { newRequest, serializeRecord } from '../../../lambda/erasure/erasure-record.js';
import { requestKey } from '../../../lambda/lake/keys/erasure-keys.js';
import { landRecords } from '../../../lambda/landing/land-records.js';
import { acceptedSpan, acceptedTrace, inlineRecord, traceContext } from '../../../devkit/builders/landing-builders.js';
import { MemoryBucket } from '../../../devkit/fakes/memory-bucket.js';
import { queryLanded } from '../../../scripts/local/query.js';

/** The bucket written as s3rver keeps it: one `<key>._S3rver_object` file per object. */
function writeAsS3rver(bucket: MemoryBucket, root: string): void {
  for (const key of bucket.keys()) {
    const file = `${path.join(root, 'data', ...key.split('/'))}._S3rver_object`;
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, bucket.objects.get(key)!.body);
  }
}

describe('npm run query with an open erasure request', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'query-erasure-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('leaves out every row of the traces it names from traces, spans and the raw views, at once', async () => {
    const bucket = new MemoryBucket();
    const hers = acceptedTrace({ session_id: 'conv-1', spans: [acceptedSpan({ input: 'secret' }, 0), acceptedSpan({}, 1)] });
    const his = acceptedTrace({ session_id: 'conv-2' }, 2);
    const later = acceptedTrace({ session_id: 'conv-1' }, 1);
    await landRecords({ store: bucket }, [inlineRecord(1, hers), inlineRecord(2, his)]);
    await compactPending({ store: bucket, now: () => new Date('2026-11-23T12:00:00Z') }, { includeOpenHours: true });
    await landRecords({ store: bucket }, [inlineRecord(3, later, traceContext({ received_at: '2026-11-23T13:00:00.000000Z', request_id: 'req-later' }))]);
    const request = newRequest('org-a', { user_ids: [], session_ids: ['conv-1'], trace_ids: [] }, new Date('2026-11-23T12:30:00Z'));
    await bucket.put(requestKey('org-a', request.erasure_id), serializeRecord(request));
    writeAsS3rver(bucket, dir);

    const counts = await queryLanded(
      ['traces', 'spans', 'traces_raw', 'spans_raw'].map((view) => `SELECT trace_id, count(*) AS n FROM ${view} GROUP BY trace_id ORDER BY trace_id`).join('; '),
      { s3Directory: dir, bucket: 'data' },
    );
    const expected = (spans: boolean) => [his, later].map((trace) => ({ trace_id: trace.trace_id, n: spans ? trace.spans.length : 1 })).sort((a, b) => (a.trace_id < b.trace_id ? -1 : 1));
    expect(counts.map((result) => result.rows)).toEqual([expected(false), expected(true), expected(false), expected(true)]);

    await bucket.put(requestKey('org-a', request.erasure_id), serializeRecord({ ...request, status: 'done', session_ids: [], selector_hmacs: ['x'] }));
    writeAsS3rver(bucket, dir);
    const [all] = await queryLanded('SELECT count(*) AS n FROM traces', { s3Directory: dir, bucket: 'data' });
    expect(all?.rows).toEqual([{ n: 3 }]);
  });
});
