import fc from 'fast-check';
import { landRecords } from '../../../lambda/landing/land-records.js';
import type { LandingRecord } from '../../../lambda/landing/landing-types.js';
import type { LandingStore } from '../../../lambda/landing/ports.js';
import { acceptedTrace, inlineRecord, parquetRows, traceContext } from '../../../devkit/builders/landing-builders.js';

/** An in-memory bucket whose writes to chosen keys fail a given number of times first. */
class FlakyBucket implements LandingStore {
  readonly objects = new Map<string, Uint8Array>();
  private readonly attempts = new Map<string, number>();
  constructor(private readonly failFirst: (key: string) => number = () => 0) {}

  async putObject(key: string, body: Uint8Array): Promise<void> {
    const attempt = (this.attempts.get(key) ?? 0) + 1;
    this.attempts.set(key, attempt);
    if (attempt <= this.failFirst(key)) throw new Error(`injected failure ${attempt} for ${key}`);
    this.objects.set(key, body);
  }

  async getObject(): Promise<Uint8Array> {
    throw new Error('no references in these tests');
  }

  /** How many times each row (trace id, or trace id + span index) is in the bucket. */
  async rowCopies(): Promise<Map<string, number>> {
    const copies = new Map<string, number>();
    for (const [key, body] of this.objects) {
      if (key.startsWith('dead-letter/')) continue;
      for (const row of await parquetRows(body)) {
        const id = key.startsWith('spans/') ? `span ${String(row.trace_id)}#${String(row.span_index)}` : `trace ${String(row.trace_id)}`;
        copies.set(id, (copies.get(id) ?? 0) + 1);
      }
    }
    return copies;
  }
}

/** What the Kinesis event source mapping does with BisectBatchOnFunctionError and reportBatchItemFailures off. */
async function consumeLikeEventSourceMapping(store: LandingStore, batch: LandingRecord[], maxAttempts = 50): Promise<void> {
  const pending: LandingRecord[][] = [batch];
  for (let attempt = 0; pending.length > 0; attempt++) {
    if (attempt > maxAttempts) throw new Error('did not converge');
    const next = pending.shift()!;
    try {
      await landRecords({ store }, next);
    } catch {
      if (next.length === 1) pending.unshift(next);
      else pending.unshift(next.slice(0, Math.ceil(next.length / 2)), next.slice(Math.ceil(next.length / 2)));
    }
  }
}

function expectedRows(batch: { trace: ReturnType<typeof acceptedTrace> }[]): Map<string, number> {
  const rows = new Map<string, number>();
  for (const { trace } of batch) {
    rows.set(`trace ${trace.trace_id}`, 1);
    trace.spans.forEach((_, i) => rows.set(`span ${trace.trace_id}#${i}`, 1));
  }
  return rows;
}

const recordArb = fc.record({ org: fc.constantFrom('org-a', 'org-b', 'org-c'), day: fc.constantFrom('22', '23'), spans: fc.integer({ min: 0, max: 3 }) });

describe('exactly one copy of every row', () => {
  it('holds for any batch, any failing writes, bisected and retried like the event source mapping does', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(recordArb, { minLength: 1, maxLength: 12 }), fc.array(fc.nat({ max: 40 }), { maxLength: 6 }), fc.integer({ min: 1, max: 3 }), async (shape, failingHashes, times) => {
        const made = shape.map((s, i) => {
          const trace = acceptedTrace({ timestamp: `2026-11-${s.day}T08:00:00.000000Z` }, s.spans);
          return { trace, record: inlineRecord(i + 1, trace, traceContext({ org_id: s.org })) };
        });
        const failing = new Set(failingHashes);
        const hash = (key: string) => [...key].reduce((h, c) => (h * 31 + c.charCodeAt(0)) % 41, 0);
        const store = new FlakyBucket((key) => (failing.has(hash(key)) ? times : 0));

        await consumeLikeEventSourceMapping(store, made.map((m) => m.record));

        expect(await store.rowCopies()).toEqual(expectedRows(made));
      }),
      { numRuns: 60 },
    );
  });

  it('holds when the same batch is landed twice', async () => {
    const made = [1, 2, 3].map((n) => ({ trace: acceptedTrace(), n }));
    const batch = made.map(({ trace, n }) => inlineRecord(n, trace, traceContext({ org_id: n === 2 ? 'org-b' : 'org-a' })));
    const store = new FlakyBucket();

    await landRecords({ store }, batch);
    await landRecords({ store }, batch);

    expect(await store.rowCopies()).toEqual(expectedRows(made));
    expect(store.objects.size).toBe(4);
  });

  it('would not hold with a checkpoint inside the batch: a retry that starts later lands a group under a new key', async () => {
    // The hazard that rules out partial batchItemFailures: records 1 and 3 share a group.
    const made = [1, 2, 3].map((n) => ({ trace: acceptedTrace(), n }));
    const batch = made.map(({ trace, n }) => inlineRecord(n, trace, traceContext({ org_id: n === 2 ? 'org-b' : 'org-a' })));
    const store = new FlakyBucket();

    await landRecords({ store }, batch);
    await landRecords({ store }, batch.slice(1));

    const copies = await store.rowCopies();
    expect(copies.get(`trace ${made[2]!.trace.trace_id}`)).toBe(2);
  });
});
