import { buildTrace, groupSpans } from '../../../../lambda/ingest/otlp/map-export.js';
import { decodeExportRequestJson } from '../../../../lambda/ingest/otlp/otlp-json.js';

describe('OTLP/JSON decoding', () => {
  it('accepts proto field names, enum names and 64-bit times as numbers, as protobuf JSON parsers do', () => {
    const decoded = decodeExportRequestJson(
      JSON.stringify({
        resource_spans: [
          {
            scope_spans: [
              {
                spans: [
                  {
                    trace_id: '0AF7651916CD43DD8448EB211C80319C',
                    span_id: 'B7AD6B7169203331',
                    name: 'chat',
                    kind: 'SPAN_KIND_CLIENT',
                    start_time_unix_nano: 1_700_000_000_000_000,
                    end_time_unix_nano: '1700000000250000000',
                    status: { code: 'STATUS_CODE_ERROR', message: 'boom' },
                  },
                ],
              },
            ],
          },
        ],
      }),
    );
    const span = decoded.resourceSpans[0]?.scopeSpans[0]?.spans[0];
    expect(span).toMatchObject({ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', kind: 3, statusCode: 2, statusMessage: 'boom' });
    expect(span?.startTimeUnixMicros).toBe(1_700_000_000_000);
    expect(span?.endTimeUnixMicros).toBe(1_700_000_000_250_000);
  });

  it('reads nanosecond times as whole microseconds, exact to the microsecond, and far-future ones as far-future', () => {
    const times = ['1700000000123456999', '999', '0', '01700000000123456789', 1_700_000_000_123_456.5, 2 ** 60 + 2 ** 12, '18446744073709551615', 9e19, 10_861_287_435_507_190_000];
    const spans = times.map((time) => ({ traceId: 'a'.repeat(32), spanId: '1'.repeat(16), startTimeUnixNano: time }));
    const decoded = decodeExportRequestJson(JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans }] }] }));
    expect(decoded.resourceSpans[0]?.scopeSpans[0]?.spans.map((span) => span.startTimeUnixMicros)).toEqual([
      1_700_000_000_123_456,
      0,
      0,
      1_700_000_000_123_456,
      1_700_000_000_123,
      Number((2n ** 60n + 2n ** 12n) / 1000n),
      Number(18446744073709551615n / 1000n),
      9e16,
      // not Math.floor(10_861_287_435_507_190_000 / 1000), which is 10_861_287_435_507_190
      10_861_287_435_507_188,
    ]);
  });

  it('rejects ids that are not hex, also when what stands for them has the length of one', () => {
    // The decoder names a non-hex id by its length alone; the mapping must reject it whatever the length sent.
    const spans = [
      { traceId: 'x'.repeat(24), spanId: '1'.repeat(16) },
      { traceId: 'a'.repeat(32), spanId: 'y'.repeat(8) },
      { traceId: 'a'.repeat(32), spanId: '2'.repeat(16), parentSpanId: 'z'.repeat(8) },
      { traceId: 'a'.repeat(32), spanId: '3'.repeat(16), parentSpanId: 'A'.repeat(16) },
    ];
    const { rejected, groups } = groupSpans(decodeExportRequestJson(JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans }] }] })));
    expect(rejected.map((span) => span.reason)).toEqual([
      'trace_id is not 16 bytes (32 hex digits) other than all zeros',
      'span_id is not 8 bytes (16 hex digits) other than all zeros',
      'parent_span_id is neither empty nor 8 bytes (16 hex digits)',
    ]);
    // Upper-case hex is hex: OTLP/JSON decoding lower-cases it.
    expect(groups.map((group) => group.spans.map((span) => span.input.parent_span_id))).toEqual([['aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa']]);
  });

  it('groups spans by trace id and marks a group without a root span as spans-only', () => {
    const span = (traceId: string, spanId: string, parentSpanId = '') => ({ traceId, spanId, parentSpanId, name: spanId, startTimeUnixNano: '1700000000000000000' });
    const { groups, spanCount } = groupSpans(
      decodeExportRequestJson(
        JSON.stringify({
          resourceSpans: [
            { scopeSpans: [{ spans: [span('a'.repeat(32), '1'.repeat(16)), span('b'.repeat(32), '2'.repeat(16), '3'.repeat(16)), span('a'.repeat(32), '4'.repeat(16), '1'.repeat(16))] }] },
          ],
        }),
      ),
    );
    expect(spanCount).toBe(3);
    expect(groups.map((group) => [group.traceHex[0], group.spans.length, buildTrace(group, undefined).draft.spansOnly])).toEqual([
      ['a', 2, false],
      ['b', 1, true],
    ]);
  });
});

describe("a span's attributes", () => {
  const attribute = (key: string, value: string) => ({ key, value: { stringValue: value } });

  it("are the resource's then the span's, the span's value winning a shared name, without any name a field took", () => {
    const { groups } = groupSpans(
      decodeExportRequestJson(
        JSON.stringify({
          resourceSpans: [
            {
              // A resource gives only the environment: its `gen_ai.conversation.id` stays in the attributes (it was taken
              // and lost before the registry of conventions); its `session.id` goes with the span's, which took that name.
              resource: { attributes: [attribute('service.name', 'svc'), attribute('gen_ai.conversation.id', 'conv-r'), attribute('session.id', 'res-session'), attribute('shared', 'from-resource')] },
              scopeSpans: [
                {
                  scope: { name: 'lib', version: '1.0' },
                  spans: [
                    {
                      traceId: 'a'.repeat(32),
                      spanId: '1'.repeat(16),
                      name: 'root',
                      kind: 'SPAN_KIND_INTERNAL',
                      startTimeUnixNano: '1700000000000000000',
                      attributes: [attribute('own', 'x'), attribute('shared', 'from-span'), attribute('session.id', 'span-session')],
                    },
                  ],
                },
              ],
            },
          ],
        }),
      ),
    );
    const span = buildTrace(groups[0]!, undefined).draft.trace as { spans: { session_id: string; attributes: { value: object } }[] };
    expect(span.spans[0]?.session_id).toBe('span-session');
    // Key order too: it is the order of the text stored.
    expect(Object.entries(span.spans[0]!.attributes.value)).toEqual([
      ['service.name', 'svc'],
      ['gen_ai.conversation.id', 'conv-r'],
      ['shared', 'from-span'],
      ['own', 'x'],
      ['otel.trace_id', 'a'.repeat(32)],
      ['otel.span_id', '1'.repeat(16)],
      ['otel.span_kind', 'internal'],
      ['otel.scope.name', 'lib'],
      ['otel.scope.version', '1.0'],
    ]);
  });
});
