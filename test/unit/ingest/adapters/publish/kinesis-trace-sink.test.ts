import type { KinesisClient, PutRecordsCommand, PutRecordsCommandOutput } from '@aws-sdk/client-kinesis';
import { PublishIncompleteError } from '../../../../../lambda/shared/domain/errors.js';
import {
  callTimeoutMs,
  KinesisTraceSink,
  MIN_PUBLISH_CALL_MS,
  PUBLISH_CALL_MAX,
  sizedCallTimeoutMs,
} from '../../../../../lambda/ingest/adapters/publish/kinesis-trace-sink.js';
import type { StreamRecord } from '../../../../../lambda/ingest/core/publish/ports.js';

/**
 * Issue 27: a 500-record PutRecords that outlasted a fixed 3 s timeout was cut, resent (a second copy) and
 * answered 503. Each call now gets a timeout sized to its records and to the time left before the request's
 * deadline, and a publish goes out as several smaller calls. The clock is pinned: nothing here waits.
 */
const NOW = 1_800_000_000_000;
const noSleep = async () => undefined;
const POLICY = { maxAttempts: 6, baseDelayMs: 1, maxDelayMs: 1 };

const records = (count: number): StreamRecord[] =>
  Array.from({ length: count }, (_, i) => ({ partitionKey: `req#${Math.floor(i / 100)}`, data: Buffer.alloc(1_000, i % 251) }));

interface Sent {
  records: number;
  requestTimeout: number | undefined;
  answer(outcome: 'ok' | 'timeout'): void;
}

/** A client whose calls wait until the test answers them, recording what each carried and the timeout it was given. */
function heldClient() {
  const sent: Sent[] = [];
  const client = {
    send: (command: PutRecordsCommand, options?: { requestTimeout?: number }) =>
      new Promise<PutRecordsCommandOutput>((resolve, reject) => {
        const count = command.input.Records?.length ?? 0;
        sent.push({
          records: count,
          requestTimeout: options?.requestTimeout,
          answer: (outcome) =>
            outcome === 'ok'
              ? resolve({ FailedRecordCount: 0, Records: Array.from({ length: count }, () => ({ SequenceNumber: '1', ShardId: 's' })), $metadata: {} })
              : reject(Object.assign(new Error('Stream timed out because of no activity'), { name: 'TimeoutError' })),
        });
      }),
  } as unknown as KinesisClient;
  return { client, sent };
}

/** Lets the sink's pending promise chains run until it has sent what it will send now. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('KinesisTraceSink: calls sized to the work and to the deadline', () => {
  it('sends a 500-record publish as calls of at most 100 records, all in flight at once', async () => {
    const { client, sent } = heldClient();
    const publish = new KinesisTraceSink(client, 'traces', POLICY, noSleep, () => NOW).publish(records(500));
    await settle();

    expect(sent.map((call) => call.records)).toEqual([100, 100, 100, 100, 100]);
    for (const call of sent) call.answer('ok');
    await expect(publish).resolves.toBeUndefined();
    expect(PUBLISH_CALL_MAX.records).toBe(100);
  });

  it('gives a larger call more time than a small one, and each at least the 6 s floor', () => {
    expect(sizedCallTimeoutMs(100, 100_000)).toBeGreaterThan(sizedCallTimeoutMs(10, 10_000));
    expect(sizedCallTimeoutMs(1, 100)).toBeGreaterThanOrEqual(6_000);
  });

  it('does not cut a slow first call that can still end in time: it gets the time left but room for one resend', async () => {
    const { client, sent } = heldClient();
    const publish = new KinesisTraceSink(client, 'traces', POLICY, noSleep, () => NOW).publish(records(100), { deadlineAtMs: NOW + 20_000 });
    await settle();

    const sized = sizedCallTimeoutMs(100, 100 * (1_000 + 'req#0'.length));
    expect(sent[0]?.requestTimeout).toBe(20_000 - sized);
    // The old fixed 3 s cut a call that Kinesis answered in 3-5 s: two copies and a 503.
    expect(sent[0]?.requestTimeout).toBeGreaterThan(5_000);
    sent[0]?.answer('ok');
    await expect(publish).resolves.toBeUndefined();
  });

  it('gives the resend after a lost answer all the time left, and never more', async () => {
    const { client, sent } = heldClient();
    const publish = new KinesisTraceSink(client, 'traces', POLICY, noSleep, () => NOW).publish(records(100), { deadlineAtMs: NOW + 20_000 });
    await settle();
    sent[0]?.answer('timeout');
    await settle();

    expect(sent).toHaveLength(2);
    expect(sent[1]?.requestTimeout).toBe(20_000);
    sent[1]?.answer('ok');
    await expect(publish).resolves.toBeUndefined();
  });

  it('starts no call with too little time left, and reports every record as not written', async () => {
    const { client, sent } = heldClient();
    const publish = new KinesisTraceSink(client, 'traces', POLICY, noSleep, () => NOW).publish(records(3), { deadlineAtMs: NOW + MIN_PUBLISH_CALL_MS - 1 });

    await expect(publish).rejects.toBeInstanceOf(PublishIncompleteError);
    await expect(publish).rejects.toMatchObject({ notWritten: 3, nothingWritten: true });
    expect(sent).toHaveLength(0);
  });

  it('never gives a call time past the deadline, and the sized time without one', () => {
    expect(callTimeoutMs(7_000, 4_000, false)).toBe(4_000);
    expect(callTimeoutMs(7_000, 4_000, true)).toBe(4_000);
    expect(callTimeoutMs(7_000, Infinity, false)).toBe(7_000);
    expect(callTimeoutMs(7_000, 22_000, false)).toBe(15_000);
  });
});
