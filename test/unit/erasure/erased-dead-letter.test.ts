/**
 * What of an erased large trace a replay after its erasure leaves (docs/operations.md, "What cannot be erased in
 * place"): its record only points at the overflow object the erasure deleted, so the landing dead-letters the pointer.
 * The dead letter holds the trace id and the request's context, never the user id or the trace's content; it goes
 * with the 90-day rule on dead-letter/ (test/infra/default-stack/data.ts).
 */
import { gunzipSync } from 'node:zlib';
import { landRecords } from '../../../lambda/landing/land-records.js';
import { overflowObjectKey } from '../../../lambda/lake/keys/overflow-keys.js';
import { encodeTraceRecord } from '../../../lambda/shared/domain/trace-record.js';
import { acceptedSpan, acceptedTrace, landingRecord, traceContext } from '../../../devkit/builders/landing-builders.js';
import { MemoryBucket } from '../../../devkit/fakes/memory-bucket.js';

describe('a large trace replayed after its erasure', () => {
  it('is dead-lettered as a pointer that names its trace id and holds no user id and no content', async () => {
    const bucket = new MemoryBucket();
    const context = traceContext();
    const trace = acceptedTrace({ user_id: 'alice@example.com', spans: [acceptedSpan({ input: 'marker-of-alice' })] });
    const key = overflowObjectKey(context, 0, trace.trace_id);
    const body = encodeTraceRecord({ v: 1, context, trace });
    await bucket.put(key, body);
    const pointer = landingRecord(1, encodeTraceRecord({ v: 1, context, ref: { bucket: 'data', key, bytes: body.byteLength, trace_id: trace.trace_id } }));
    expect(await landRecords({ store: bucket }, [pointer])).toMatchObject({ deadLettered: 0, rows: { traces: 1, spans: 1 } });

    // The erasure deletes the overflow object (and the rows); the replay lands the same record again.
    await bucket.delete([key, ...bucket.keys('traces/'), ...bucket.keys('spans/')]);
    expect(await landRecords({ store: bucket }, [pointer])).toMatchObject({ deadLettered: 1, rows: { traces: 0, spans: 0 } });

    const [letterKey] = bucket.keys('dead-letter/');
    expect(bucket.keys()).toEqual([letterKey]);
    const letter = JSON.parse(Buffer.from(bucket.objects.get(letterKey!)!.body).toString('utf8')) as { reason: string; data_base64: string };
    const record = gunzipSync(Buffer.from(letter.data_base64, 'base64')).toString('utf8');
    const everything = `${JSON.stringify(letter)}\n${record}`;
    expect(everything).toContain(trace.trace_id);
    expect(everything).toContain(context.org_id);
    expect(everything).not.toContain('alice');
    expect(everything).not.toContain('marker-of-alice');
  });
});
