import { rowBatches, readRowGroups } from '../../../lambda/lake/lifecycle/parquet-rows.js';
import { type ColumnBatch, spanBatches, traceBatches } from '../../../lambda/datasets/column-batches.js';
import { toLandableTrace } from '../../../lambda/landing/landable-trace.js';
import {
  type ColumnType,
  DATASETS,
  type LandableTrace,
  type LandedDataset,
  SPANS,
  type SpanRowSource,
  TRACES,
  type TraceRowSource,
} from '../../../lambda/datasets/registry.js';
import { writeParquet } from '../../../lambda/datasets/parquet/parquet-writer.js';
import { acceptedSpan, acceptedTrace, parquetRows, traceContext } from '../../../devkit/builders/landing-builders.js';

const asyncBuffer = (bytes: Uint8Array) => {
  const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  return { byteLength: buffer.byteLength, slice: (start: number, end?: number) => buffer.slice(start, end) };
};

const isType: Record<ColumnType, (value: unknown) => boolean> = {
  string: (value) => typeof value === 'string',
  nullable_string: (value) => value === null || typeof value === 'string',
  int32: (value) => Number.isInteger(value) && Math.abs(value as number) < 2 ** 31,
  int64: (value) => Number.isSafeInteger(value),
  double: (value) => typeof value === 'number',
  timestamp: (value) => typeof value === 'bigint',
  string_list: (value) => Array.isArray(value) && value.every((item) => typeof item === 'string'),
};

describe('the column registry', () => {
  const trace = acceptedTrace({ attributes: '{"tags":["a","b"]}' }, 3);
  trace.spans[1] = acceptedSpan({ parent_span_id: trace.spans[0]!.span_id, error_message: 'boom', attributes: '{}' }, 1);
  const landable: LandableTrace[] = [toLandableTrace(traceContext(), trace), toLandableTrace(traceContext({ request_id: 'req-2' }), acceptedTrace({}, 2))];

  it.each(DATASETS.map((dataset) => [dataset.name, dataset] as const))('names each %s column once and takes a value of its type for every row', (_, dataset) => {
    expect(new Set(dataset.columns.map((column) => column.name)).size).toBe(dataset.columns.length);
    for (const t of landable) {
      for (const column of dataset.columns) {
        const values = dataset === TRACES ? [column.value(t, 0)] : t.trace.spans.map((_span, i) => column.value(t, i));
        for (const value of values) expect([column.name, isType[column.type](value)]).toEqual([column.name, true]);
      }
    }
  });

  it('builds every span and trace row from the accessors', async () => {
    const spans = await parquetRows(writeParquet(SPANS, spanBatches(landable, 2)).bytes);
    const traces = await parquetRows(writeParquet(TRACES, traceBatches(landable, 1)).bytes);

    expect(spans.map((row) => [row.trace_id, row.span_index, row.span_id, row.parent_span_id, row.error_message, row.tags, row.request_id])).toEqual(
      landable.flatMap((t) =>
        t.trace.spans.map((span, i) => [t.trace.trace_id, i, span.span_id, span.parent_span_id, span.error_message, t.spanTags[i], t.context.request_id]),
      ),
    );
    expect(traces.map((row) => [row.trace_id, row.tags, row.span_count, row.input_tokens])).toEqual(
      landable.map((t) => [t.trace.trace_id, t.tags, t.trace.spans.length, BigInt(t.trace.input_tokens)]),
    );
  });

  it('stores every safe integer of an int64 column exactly, negative ones included', () => {
    const extremes = [0, -1, 1, 2 ** 32, -(2 ** 32) - 1, 2 ** 53 - 1, -(2 ** 53 - 1), 123_456_789_012];
    const dataset = { ...SPANS, columns: [{ name: 'n', type: 'int64', value: (_t, i) => extremes[i]! }] } satisfies LandedDataset<SpanRowSource>;
    const trace = toLandableTrace(traceContext(), acceptedTrace({}, extremes.length));
    const [batch] = [...spanBatches([trace], 100, dataset)];

    expect([...(batch!.columns[0] as BigInt64Array)]).toEqual(extremes.map(BigInt));
  });

  // Adding a field: the registry entry is the only landing change; the row builder, the Parquet schema and
  // the compaction writer's batches follow from it.
  const withField = {
    spans: {
      ...SPANS,
      columns: [
        ...SPANS.columns,
        { name: 'name_length', type: 'int32', value: (t, i) => t.trace.spans[i]!.name.length },
        { name: 'parent_or_self', type: 'string', value: (t, i) => t.trace.spans[i]!.parent_span_id ?? t.trace.spans[i]!.span_id },
      ],
    } satisfies LandedDataset<SpanRowSource>,
    traces: {
      ...TRACES,
      columns: [...TRACES.columns, { name: 'first_span_at', type: 'timestamp', value: (t) => t.spanTimestampMicros[0] ?? t.timestampMicros }],
    } satisfies LandedDataset<TraceRowSource>,
  };

  it('lands a column added to the registry in both datasets, readable back by name', async () => {
    const spans = await parquetRows(writeParquet(withField.spans, spanBatches(landable, 3, withField.spans)).bytes);
    const traces = await parquetRows(writeParquet(withField.traces, traceBatches(landable, 10, withField.traces)).bytes);

    const allSpans = landable.flatMap((t) => t.trace.spans);
    expect(spans.map((row) => row.name_length)).toEqual(allSpans.map((span) => span.name.length));
    expect(spans.map((row) => row.parent_or_self)).toEqual(allSpans.map((span) => span.parent_span_id ?? span.span_id));
    expect(traces.map((row) => row.first_span_at)).toEqual(landable.map((t) => new Date(Number(t.spanTimestampMicros[0]! / 1000n))));
  });

  it('carries the added column through the compaction writer, and gives older files its zero value', async () => {
    const withNew = writeParquet(withField.spans, spanBatches(landable, 100, withField.spans));
    const older = writeParquet(SPANS, spanBatches(landable, 100));
    const rebatched = async (bytes: Uint8Array): Promise<ColumnBatch[]> => {
      const batches: ColumnBatch[] = [];
      for await (const rows of readRowGroups(asyncBuffer(bytes), withField.spans)) batches.push(...rowBatches(withField.spans, rows, 100));
      return batches;
    };
    const compacted = await parquetRows(writeParquet(withField.spans, [...(await rebatched(withNew.bytes)), ...(await rebatched(older.bytes))]).bytes);

    const lengths = landable.flatMap((t) => t.trace.spans.map((span) => span.name.length));
    expect(compacted.map((row) => row.name_length)).toEqual([...lengths, ...lengths.map(() => 0)]);
    expect(compacted.map((row) => row.span_id)).toEqual([...landable, ...landable].flatMap((t) => t.trace.spans.map((span) => span.span_id)));
  });
});
