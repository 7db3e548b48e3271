import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { opentelemetry } from '../../../devkit/generated/otlp-trace.js';
import { landRecords } from '../../../lambda/landing/land-records.js';
import { S3LandingStore } from '../../../lambda/landing/s3-landing-store.js';
import { encodeTraceRecord } from '../../../lambda/shared/domain/trace-record.js';
import { landingRecord, parquetRows } from '../../../devkit/builders/landing-builders.js';
import { gatewayEvent, NOW_MICROS } from '../../../devkit/builders/trace-builders.js';
import { createHarness, publishedRecords, s3Mock } from '../../support/ingest-harness.js';

// docs/landing.md, "Span order": span_index numbers a trace's spans within the record that carried them, and
// span_count counts that record's spans; a trace over several OTLP exports is ordered by received_at,
// request_id, span_index.

type SpanProps = opentelemetry.proto.trace.v1.Span.$Properties;
const Request = opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
const TRACE = '0af7651916cd43dd8448eb211c80319c';
const nowNanos = BigInt(NOW_MICROS) * 1000n;
const hex = (text: string) => Uint8Array.from(Buffer.from(text, 'hex'));
const at = (ms: number) => (nowNanos - 60_000_000_000n + BigInt(ms) * 1_000_000n).toString() as unknown as SpanProps['startTimeUnixNano'];

function span(id: number, name: string, startMs: number, root = false): SpanProps {
  return {
    traceId: hex(TRACE),
    spanId: hex(id.toString(16).padStart(16, '0')),
    parentSpanId: root ? undefined : hex('0000000000000001'),
    name,
    kind: 1,
    startTimeUnixNano: at(startMs),
    endTimeUnixNano: at(startMs + 5),
  };
}

const exportOf = (spans: SpanProps[]) => Buffer.from(Request.encode({ resourceSpans: [{ scopeSpans: [{ spans }] }] }).finish());

describe('span order of a trace that arrives over several OTLP exports', () => {
  it('numbers each export from 0, counts the root export in span_count, and orders by received_at, request_id, span_index', async () => {
    const h = await createHarness();
    // As a BatchSpanProcessor sends them: the children that ended first, then the rest with the root, which ends last.
    const exports = [
      [span(2, 'plan', 10), span(3, 'search', 20)],
      [span(4, 'answer', 30), span(1, 'agent', 0, true)],
    ];
    for (const [i, spans] of exports.entries()) {
      const event = gatewayEvent({ route: 'otlp', apiKey: h.orgKey, headers: { 'Content-Type': 'application/x-protobuf' }, body: exportOf(spans), requestId: `req-${i + 1}` });
      expect((await h.invoke(event)).statusCode).toBe(200);
    }
    const records = publishedRecords().map((record, n) => landingRecord(n + 1, encodeTraceRecord(record)));
    s3Mock.on(PutObjectCommand).resolves({});
    await landRecords({ store: new S3LandingStore(new S3Client({ region: 'us-east-1' }), 'data-bucket') }, records);

    const objects = s3Mock.commandCalls(PutObjectCommand).map((call) => call.args[0].input);
    const rowsOf = async (dataset: string) =>
      (await Promise.all(objects.filter((o) => o.Key!.startsWith(`${dataset}/`)).map((o) => parquetRows(o.Body as Uint8Array)))).flat();
    const spans = await rowsOf('spans');
    const traces = await rowsOf('traces');

    expect(spans.map((row) => [row.request_id, row.span_index, row.name]).sort()).toEqual([
      ['req-1', 0, 'plan'],
      ['req-1', 1, 'search'],
      ['req-2', 0, 'answer'],
      ['req-2', 1, 'agent'],
    ]);
    expect(traces.map((row) => [row.request_id, row.span_count, row.root_span_name])).toEqual([['req-2', 2, 'agent']]);
    const ordered = [...spans].sort(
      (a, b) =>
        (a.received_at as Date).getTime() - (b.received_at as Date).getTime() ||
        String(a.request_id).localeCompare(String(b.request_id)) ||
        (a.span_index as number) - (b.span_index as number),
    );
    expect(ordered.map((row) => row.name)).toEqual(['plan', 'search', 'answer', 'agent']);
    expect(spans).toHaveLength(4);
  });
});
