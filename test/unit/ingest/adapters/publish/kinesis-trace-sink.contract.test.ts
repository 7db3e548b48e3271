import { getEventListeners } from 'node:events';
import { KinesisClient, PutRecordsCommand, type PutRecordsCommandInput, type PutRecordsCommandOutput } from '@aws-sdk/client-kinesis';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import { DependencyUnavailableError, PublishIncompleteError } from '../../../../../lambda/shared/domain/errors.js';
import {
  callTimeoutMs,
  chunkForPutRecords,
  DEFAULT_PUBLISH_BACKOFF,
  KinesisTraceSink,
  MAX_UNKNOWN_OUTCOME_CALLS,
  MIN_PUBLISH_CALL_MS,
  PUT_RECORDS_MAX_BYTES,
  PUT_RECORDS_MAX_COUNT,
  sizedCallTimeoutMs,
} from '../../../../../lambda/ingest/adapters/publish/kinesis-trace-sink.js';
import type { StreamRecord } from '../../../../../lambda/ingest/core/publish/ports.js';

/**
 * Issue 38: what the sink sends (stream, partition keys, entries in order), what it reports as certainly not written
 * (a refusal by the service, a connection that was never made) and what as possibly written (a timeout, a lost
 * connection, a call the SDK retried behind the sink's back), and that no call starts at or past the deadline.
 */
const kinesis = mockClient(KinesisClient);
const client = kinesis as unknown as KinesisClient;
const NOW = 1_800_000_000_000;
const POLICY = { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 1 };
const noSleep = async () => undefined;
const sink = (policy = POLICY) => new KinesisTraceSink(client, 'traces', policy, noSleep, () => NOW);

/** Records of three requests' keys, in the order a publish hands them over; data says which record it is. */
const keyed = (keys: readonly string[]): StreamRecord[] => keys.map((partitionKey, i) => ({ partitionKey, data: Buffer.from(`record-${i}`) }));
const sentEntries = () =>
  kinesis.commandCalls(PutRecordsCommand).map((call) => (call.args[0].input.Records ?? []).map((e) => [e.PartitionKey, Buffer.from(e.Data ?? []).toString()]));
const ok = (input: PutRecordsCommandInput): PutRecordsCommandOutput => ({
  FailedRecordCount: 0,
  Records: (input.Records ?? []).map(() => ({ SequenceNumber: '1', ShardId: 'shardId-000000000000' })),
  $metadata: {},
});
const throttled = { ErrorCode: 'ProvisionedThroughputExceededException', ErrorMessage: 'Rate exceeded for shard shardId-000000000000' };
const refusal = () => Object.assign(new Error('Rate exceeded'), { name: 'ProvisionedThroughputExceededException', $fault: 'client', $metadata: { attempts: 1 } });
const timeout = () => Object.assign(new Error('Stream timed out because of no activity'), { name: 'TimeoutError', $metadata: { attempts: 1 } });
/** The options of the sink's `i`-th send (aws-sdk-client-mock's types know only the command). */
const sendOptions = (i: number) => (kinesis.send.getCall(i).args as unknown[])[1] as { abortSignal?: AbortSignal; requestTimeout: number };
const failureOf = async (publish: Promise<void>) => {
  const error = await publish.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PublishIncompleteError);
  return error as PublishIncompleteError;
};
/** The first chunk's failure, and what ended its last attempt (the sink's error wraps the chunk's, which keeps it). */
const rootCause = (error: PublishIncompleteError) => (error.cause as Error).cause as Error;

beforeEach(() => kinesis.reset());

describe('KinesisTraceSink: what it sends', () => {
  it("sends every record with its own partition key and data, in order, to the sink's stream", async () => {
    kinesis.on(PutRecordsCommand).callsFake(ok);
    const records = keyed(['org-a#0', 'org-a#0', 'org-b#7', 'é#1']);
    await sink().publish(records);

    expect(kinesis).toHaveReceivedCommandTimes(PutRecordsCommand, 1);
    expect(kinesis).toHaveReceivedCommandWith(PutRecordsCommand, {
      StreamName: 'traces',
      Records: records.map((r) => ({ PartitionKey: r.partitionKey, Data: r.data })),
    });
    expect(sentEntries()).toEqual([
      [
        ['org-a#0', 'record-0'],
        ['org-a#0', 'record-1'],
        ['org-b#7', 'record-2'],
        ['é#1', 'record-3'],
      ],
    ]);
  });

  it('resends only the refused entries, each still under its own partition key', async () => {
    kinesis
      .on(PutRecordsCommand)
      .callsFakeOnce((input: PutRecordsCommandInput) => ({
        FailedRecordCount: 2,
        Records: (input.Records ?? []).map((_, i) => (i === 1 || i === 3 ? throttled : { SequenceNumber: '1', ShardId: 's' })),
        $metadata: {},
      }))
      .callsFake(ok);
    await sink().publish(keyed(['k#0', 'k#1', 'k#2', 'k#3']));

    expect(sentEntries()).toEqual([
      [
        ['k#0', 'record-0'],
        ['k#1', 'record-1'],
        ['k#2', 'record-2'],
        ['k#3', 'record-3'],
      ],
      [
        ['k#1', 'record-1'],
        ['k#3', 'record-3'],
      ],
    ]);
  });

  it('splits 250 records into calls of 100, 100 and 50 that keep each record with its key', async () => {
    kinesis.on(PutRecordsCommand).callsFake(ok);
    const records = keyed(Array.from({ length: 250 }, (_, i) => `req#${Math.floor(i / 100)}`));
    await sink().publish(records);

    const calls = sentEntries();
    expect(calls.map((c) => c.length)).toEqual([100, 100, 50]);
    expect(calls.flat()).toEqual(records.map((r) => [r.partitionKey, Buffer.from(r.data).toString()]));
  });

  it("gives each call the request's signal and its own sized timeout", async () => {
    kinesis.on(PutRecordsCommand).callsFake(ok);
    const signal = new AbortController().signal;
    await sink().publish(keyed(['k']), { signal });

    const options = sendOptions(0);
    expect(options).toEqual({ abortSignal: signal, requestTimeout: sizedCallTimeoutMs(1, 'record-0'.length + 'k'.length) });
    // Nothing is left listening on the request's signal once the call is answered.
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
  });

  it('takes a response without FailedRecordCount as all written, even without per-entry results', async () => {
    kinesis.on(PutRecordsCommand).resolves({ $metadata: {} });
    await expect(sink().publish(keyed(['a', 'b']))).resolves.toBeUndefined();
    expect(kinesis).toHaveReceivedCommandTimes(PutRecordsCommand, 1);
  });

  it('takes a FailedRecordCount whose entries all carry a sequence number as all written', async () => {
    kinesis.on(PutRecordsCommand).callsFake((input: PutRecordsCommandInput) => ({ ...ok(input), FailedRecordCount: 1 }));
    await expect(sink().publish(keyed(['a', 'b']))).resolves.toBeUndefined();
    expect(kinesis).toHaveReceivedCommandTimes(PutRecordsCommand, 1);
  });

  it('resends an entry the response has no result for, and reports it not written when that never changes', async () => {
    // Results for every entry but the last.
    kinesis.on(PutRecordsCommand).callsFake((input: PutRecordsCommandInput) => ({ FailedRecordCount: 1, Records: ok(input).Records?.slice(1), $metadata: {} }));
    const error = await failureOf(sink().publish(keyed(['a', 'b'])));

    expect(sentEntries()).toEqual([[['a', 'record-0'], ['b', 'record-1']], ...Array(POLICY.maxAttempts - 1).fill([['b', 'record-1']])]);
    expect(error.notWrittenIndexes).toEqual([1]);
    expect(error.message).toBe(`PutRecords failed after ${POLICY.maxAttempts} attempts: 1 of 1 records failed (unknown)`);
  });
});

describe('KinesisTraceSink: what it reports as not written', () => {
  it('names, by position in the publish, the entries refused on every attempt, with the error code', async () => {
    kinesis.on(PutRecordsCommand).callsFake((input: PutRecordsCommandInput) => {
      const results = (input.Records ?? []).map((e) => (e.PartitionKey === 'hot' ? throttled : { SequenceNumber: '1', ShardId: 's' }));
      return { FailedRecordCount: results.filter((r) => 'ErrorCode' in r).length, Records: results, $metadata: {} };
    });
    const records = keyed([...Array<string>(100).fill('cold'), 'cold', 'hot', 'cold', 'hot']);
    const error = await failureOf(sink().publish(records));

    expect(error.notWrittenIndexes).toEqual([101, 103]);
    expect(error.total).toBe(104);
    expect(error.dependency).toBe('kinesis');
    expect(error.message).toBe(`PutRecords failed after ${POLICY.maxAttempts} attempts: 2 of 2 records failed (ProvisionedThroughputExceededException)`);
    // The failed call's own error, by position in the publish too.
    expect(error.cause).toBeInstanceOf(PublishIncompleteError);
    expect(error.cause).toMatchObject({ dependency: 'kinesis', notWrittenIndexes: [101, 103], total: 4, message: error.message });
  });

  it('adds up the refused entries of several calls, each at its own position', async () => {
    kinesis.on(PutRecordsCommand).callsFake((input: PutRecordsCommandInput) => {
      const results = (input.Records ?? []).map((e, i) => (i === 0 && e.PartitionKey !== 'first' ? throttled : { SequenceNumber: '1', ShardId: 's' }));
      return { FailedRecordCount: results.filter((r) => 'ErrorCode' in r).length, Records: results, $metadata: {} };
    });
    const error = await failureOf(sink().publish(keyed(['first', ...Array<string>(249).fill('k')])));

    // Each call's first entry is refused every time, but for the publish's very first record.
    expect(error.notWrittenIndexes).toEqual([100, 200]);
  });

  it('counts a refusal by the service on every attempt as nothing written', async () => {
    kinesis.on(PutRecordsCommand).rejects(refusal());
    const error = await failureOf(sink().publish(keyed(['a', 'b', 'c'])));

    expect(kinesis).toHaveReceivedCommandTimes(PutRecordsCommand, POLICY.maxAttempts);
    expect(error).toMatchObject({ notWrittenIndexes: [0, 1, 2], nothingWritten: true });
    expect(error.message).toBe(`PutRecords failed after ${POLICY.maxAttempts} attempts: ProvisionedThroughputExceededException`);
    expect(rootCause(error).name).toBe('ProvisionedThroughputExceededException');
  });

  it.each([
    ['ECONNREFUSED', { code: 'ECONNREFUSED' }],
    ['ENOTFOUND', { code: 'ENOTFOUND' }],
    ['EAI_AGAIN', { code: 'EAI_AGAIN' }],
    ['ECONNREFUSED under an HTTP/2 stream error', { code: 'ERR_HTTP2_STREAM_CANCEL', cause: { code: 'ECONNREFUSED' } }],
  ])('counts a connection never made (%s) as nothing written, and tries again', async (_, fields) => {
    const neverSent = () => Object.assign(new Error('connect failed'), { name: 'Error', $metadata: { attempts: 1 } }, fields);
    kinesis.on(PutRecordsCommand).rejectsOnce(neverSent()).rejectsOnce(neverSent()).rejects(neverSent());
    const error = await failureOf(sink({ maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 1 }).publish(keyed(['a', 'b'])));

    // Every attempt was made: a refused connection says nothing about a copy, so it does not use up the two
    // calls of unknown outcome.
    expect(kinesis).toHaveReceivedCommandTimes(PutRecordsCommand, 3);
    expect(error).toMatchObject({ notWrittenIndexes: [0, 1], nothingWritten: true });
  });

  it('publishes after a refused connection once the stream answers', async () => {
    kinesis
      .on(PutRecordsCommand)
      .rejectsOnce(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))
      .callsFake(ok);
    await expect(sink().publish(keyed(['a']))).resolves.toBeUndefined();
    expect(kinesis).toHaveReceivedCommandTimes(PutRecordsCommand, 2);
  });

  it.each([
    ['a timeout', () => timeout()],
    ['a connection reset mid-request', () => Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })],
    ['a reset carrying a socket error as its cause', () => Object.assign(new Error('reset'), { code: 'ECONNRESET', cause: { code: 'EPIPE' } })],
    ['a server fault', () => Object.assign(new Error('Internal'), { name: 'InternalFailureException', $fault: 'server' })],
    ['a thrown non-object', () => 'boom'],
    ['a thrown null', () => null],
    ['a thrown undefined', () => undefined],
  ])('counts %s as possibly written: sent twice at most, and nothing reported not written', async (_, failure) => {
    const failing = { send: () => Promise.reject(failure()) } as unknown as KinesisClient;
    let calls = 0;
    const counting = { send: (...args: Parameters<KinesisClient['send']>) => (calls++, (failing.send as (...a: unknown[]) => unknown)(...args)) } as unknown as KinesisClient;
    const error = await failureOf(new KinesisTraceSink(counting, 'traces', POLICY, noSleep, () => NOW).publish(keyed(['a', 'b'])));

    expect(calls).toBe(MAX_UNKNOWN_OUTCOME_CALLS);
    expect(error).toMatchObject({ notWrittenIndexes: [], nothingWritten: false, total: 2 });
  });

  it.each([
    ['null', null],
    ['a plain object', { code: 'EPIPE' }],
    ['an object whose name is not a string', { name: 42 }],
  ])('describes %s, when thrown, as "error"', async (_, thrown) => {
    const failing = { send: () => Promise.reject(thrown) } as unknown as KinesisClient;
    const error = await failureOf(new KinesisTraceSink(failing, 'traces', POLICY, noSleep, () => NOW).publish(keyed(['a'])));
    expect(error.message).toBe(`PutRecords failed after ${MAX_UNKNOWN_OUTCOME_CALLS} attempts: error`);
    expect(rootCause(error)).toBe(thrown);
  });

  it('names a thrown value without a name "error", and describes a thrown error by its name', async () => {
    const plain = { send: () => Promise.reject({ $fault: 'client' }) } as unknown as KinesisClient;
    const error = await failureOf(new KinesisTraceSink(plain, 'traces', { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 }, noSleep, () => NOW).publish(keyed(['a'])));
    expect(error.message).toBe('PutRecords failed after 1 attempts: error');
    expect(error).toMatchObject({ notWrittenIndexes: [0] });
  });

  it('keeps entries of a timed-out call possibly written when later attempts are refused', async () => {
    kinesis.on(PutRecordsCommand).rejectsOnce(timeout()).rejects(refusal());
    const error = await failureOf(sink().publish(keyed(['a', 'b'])));

    expect(kinesis).toHaveReceivedCommandTimes(PutRecordsCommand, POLICY.maxAttempts);
    expect(error.notWrittenIndexes).toEqual([]);
  });

  it('keeps entries possibly written when a timed-out call is followed by partial failures', async () => {
    kinesis
      .on(PutRecordsCommand)
      .rejectsOnce(timeout())
      .callsFake((input: PutRecordsCommandInput) => ({ FailedRecordCount: input.Records?.length, Records: (input.Records ?? []).map(() => throttled), $metadata: {} }));
    const error = await failureOf(sink().publish(keyed(['a', 'b'])));
    expect(error.notWrittenIndexes).toEqual([]);
  });
});

describe("KinesisTraceSink: the SDK's own retries cannot hide a possible write", () => {
  it('counts a refusal the SDK reached after retrying as possibly written (an earlier attempt may have timed out)', async () => {
    kinesis.on(PutRecordsCommand).rejects(Object.assign(refusal(), { $metadata: { attempts: 2 } }));
    const error = await failureOf(sink().publish(keyed(['a', 'b'])));

    expect(error).toMatchObject({ notWrittenIndexes: [], nothingWritten: false });
    expect(kinesis).toHaveReceivedCommandTimes(PutRecordsCommand, MAX_UNKNOWN_OUTCOME_CALLS);
  });

  it('counts a refused connection the SDK reached after retrying as possibly written', async () => {
    kinesis.on(PutRecordsCommand).rejects(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED', $metadata: { attempts: 3 } }));
    const error = await failureOf(sink().publish(keyed(['a'])));
    expect(error.notWrittenIndexes).toEqual([]);
  });

  it('counts entries refused in an answer the SDK got after retrying as possibly written, and resends them', async () => {
    kinesis
      .on(PutRecordsCommand)
      .callsFakeOnce((input: PutRecordsCommandInput) => ({
        FailedRecordCount: 1,
        Records: (input.Records ?? []).map((_, i) => (i === 0 ? throttled : { SequenceNumber: '1', ShardId: 's' })),
        $metadata: { attempts: 2 },
      }))
      .callsFake((input: PutRecordsCommandInput) => ({ FailedRecordCount: 1, Records: (input.Records ?? []).map(() => throttled), $metadata: { attempts: 1 } }));
    const error = await failureOf(sink().publish(keyed(['a', 'b'])));

    expect(sentEntries()).toEqual([[['a', 'record-0'], ['b', 'record-1']], ...Array(POLICY.maxAttempts - 1).fill([['a', 'record-0']])]);
    expect(error.notWrittenIndexes).toEqual([]);
  });

  it('takes an SDK that made one attempt at its word', async () => {
    kinesis.on(PutRecordsCommand).callsFake((input: PutRecordsCommandInput) => ({ FailedRecordCount: 1, Records: (input.Records ?? []).map(() => throttled), $metadata: { attempts: 1 } }));
    const error = await failureOf(sink().publish(keyed(['a'])));
    expect(error.notWrittenIndexes).toEqual([0]);
  });

  it('holds on a real KinesisClient that retries: its throttled attempts are hidden behind one refusal', async () => {
    // The SDK's default client makes 3 attempts; the sink sees one call whose $metadata says so.
    const retrying = new KinesisClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' }, maxAttempts: 3 });
    expect(await retrying.config.maxAttempts()).toBe(3);
    kinesis.on(PutRecordsCommand).rejects(Object.assign(refusal(), { $metadata: { attempts: 3 } }));
    const error = await failureOf(new KinesisTraceSink(retrying, 'traces', POLICY, noSleep, () => NOW).publish(keyed(['a'])));
    expect(error.notWrittenIndexes).toEqual([]);
  });
});

describe('KinesisTraceSink: the deadline', () => {
  it(`starts a call with exactly ${MIN_PUBLISH_CALL_MS} ms left, and gives it all of them`, async () => {
    kinesis.on(PutRecordsCommand).callsFake(ok);
    await sink().publish(keyed(['a']), { deadlineAtMs: NOW + MIN_PUBLISH_CALL_MS });

    expect(kinesis).toHaveReceivedCommandTimes(PutRecordsCommand, 1);
    expect(sendOptions(0).requestTimeout).toBe(MIN_PUBLISH_CALL_MS);
  });

  it.each([0, -1, -60_000, MIN_PUBLISH_CALL_MS - 1])('starts no call with %i ms left, and says how little time was left', async (left) => {
    kinesis.on(PutRecordsCommand).callsFake(ok);
    const error = await failureOf(sink().publish(keyed(['a', 'b']), { deadlineAtMs: NOW + left }));

    expect(kinesis).not.toHaveReceivedCommand(PutRecordsCommand);
    expect(error).toMatchObject({ notWrittenIndexes: [0, 1], nothingWritten: true });
    expect(error.message).toBe('PutRecords failed after 1 attempts: RequestAbortedError');
    expect(rootCause(error).message).toBe(`${Math.max(0, left)} ms left before the deadline: too little for another call`);
  });

  it('starts no retry once the backoff has carried it past the deadline', async () => {
    let now = NOW;
    kinesis.on(PutRecordsCommand).rejects(refusal());
    // Each backoff takes 5 s of a 10 s budget: attempts at 0 and 5 s; the next would start at the deadline itself.
    const slowSleep = async () => void (now += 5_000);
    const error = await failureOf(new KinesisTraceSink(client, 'traces', { maxAttempts: 6, baseDelayMs: 1, maxDelayMs: 1 }, slowSleep, () => now).publish(keyed(['a']), { deadlineAtMs: NOW + 10_000 }));

    expect(kinesis).toHaveReceivedCommandTimes(PutRecordsCommand, 2);
    const timeouts = kinesis.send.getCalls().map((_, i) => sendOptions(i).requestTimeout);
    expect(timeouts.every((t) => t > 0 && t <= 10_000)).toBe(true);
    expect(error).toMatchObject({ notWrittenIndexes: [0] });
    expect(rootCause(error).message).toBe('0 ms left before the deadline: too little for another call');
  });

  it('rounds the time left in its message', async () => {
    const error = await failureOf(new KinesisTraceSink(client, 'traces', POLICY, noSleep, () => NOW + 0.4).publish(keyed(['a']), { deadlineAtMs: NOW + 100 }));
    expect(rootCause(error).message).toBe('100 ms left before the deadline: too little for another call');
  });

  it('starts no call once the request is aborted, and reports every record not written', async () => {
    kinesis.on(PutRecordsCommand).callsFake(ok);
    const controller = new AbortController();
    controller.abort();
    const error = await failureOf(sink().publish(keyed(['a', 'b']), { signal: controller.signal }));

    expect(kinesis).not.toHaveReceivedCommand(PutRecordsCommand);
    expect(error).toMatchObject({ notWrittenIndexes: [0, 1] });
    expect(rootCause(error)).toMatchObject({ name: 'RequestAbortedError', message: 'the request reached its deadline before the publish ended' });
  });

  it('abandons a call in flight at the abort, even over a client that ignores the signal; its records may be written', async () => {
    const hanging = { send: () => new Promise(() => undefined) } as unknown as KinesisClient;
    const controller = new AbortController();
    const publish = new KinesisTraceSink(hanging, 'traces', POLICY, noSleep, () => NOW).publish(keyed(['a']), { signal: controller.signal });
    await new Promise((resolve) => setImmediate(resolve));
    controller.abort();
    const error = await failureOf(publish);

    expect(error.notWrittenIndexes).toEqual([]);
    expect(error.message).toBe('PutRecords failed after 2 attempts: RequestAbortedError');
  });

  it('reports an abandoned call by its AbortError when it was the last allowed', async () => {
    const hanging = { send: () => new Promise(() => undefined) } as unknown as KinesisClient;
    const controller = new AbortController();
    const publish = new KinesisTraceSink(hanging, 'traces', { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 }, noSleep, () => NOW).publish(keyed(['a']), { signal: controller.signal });
    await new Promise((resolve) => setImmediate(resolve));
    controller.abort();
    const error = await failureOf(publish);

    expect(rootCause(error)).toMatchObject({ name: 'AbortError', message: 'the call was abandoned at the request deadline' });
  });

  it('abandons a call whose signal aborted while it was being sent', async () => {
    const controller = new AbortController();
    const abortingWhileSending = {
      send: () => {
        controller.abort();
        return new Promise(() => undefined);
      },
    } as unknown as KinesisClient;
    const publish = new KinesisTraceSink(abortingWhileSending, 'traces', POLICY, noSleep, () => NOW).publish(keyed(['a']), { signal: controller.signal });
    // A publish that waited for this call would never settle.
    const settled = await Promise.race([publish.then(() => 'resolved', () => 'rejected'), new Promise((resolve) => setTimeout(resolve, 1_000, 'hung'))]);
    expect(settled).toBe('rejected');
    expect((await failureOf(publish)).notWrittenIndexes).toEqual([]);
  });

  it('accepts a client that answers with a plain value under a signal', async () => {
    const plain = { send: (command: PutRecordsCommand) => ok(command.input) } as unknown as KinesisClient;
    const signal = new AbortController().signal;
    await expect(new KinesisTraceSink(plain, 'traces', POLICY, noSleep, () => NOW).publish(keyed(['a']), { signal })).resolves.toBeUndefined();
  });
});

describe('KinesisTraceSink: limits and defaults', () => {
  it("holds PutRecords' own limits: 500 records, 5 MiB", () => {
    expect(PUT_RECORDS_MAX_COUNT).toBe(500);
    expect(PUT_RECORDS_MAX_BYTES).toBe(5_242_880);
  });

  it('sizes a call: 6 s, plus 10 ms a record and 4 s a MiB, rounded up', () => {
    expect(sizedCallTimeoutMs(0, 0)).toBe(6_000);
    expect(sizedCallTimeoutMs(100, 1024 * 1024)).toBe(11_000);
    expect(sizedCallTimeoutMs(1, 1)).toBe(6_011);
    expect(sizedCallTimeoutMs(PUT_RECORDS_MAX_COUNT, PUT_RECORDS_MAX_BYTES)).toBe(31_000);
  });

  it('keeps a call its sized time when cutting it would not leave room for a resend', () => {
    expect(callTimeoutMs(7_000, 10_000, false)).toBe(7_000);
    expect(callTimeoutMs(7_000, 14_000, false)).toBe(7_000);
    expect(callTimeoutMs(7_000, Infinity, true)).toBe(7_000);
    expect(callTimeoutMs(7_000, 30_000, true)).toBe(30_000);
  });

  it('chunks at the byte limit, data and partition key (in UTF-8) together', () => {
    const record = (bytes: number, partitionKey = 'k'): StreamRecord => ({ partitionKey, data: Buffer.alloc(bytes - Buffer.byteLength(partitionKey)) });
    const limits = { records: 10, bytes: 100 };
    expect(chunkForPutRecords([record(60), record(40)], limits).map((c) => c.length)).toEqual([2]);
    expect(chunkForPutRecords([record(60), record(41)], limits).map((c) => c.length)).toEqual([1, 1]);
    // 'é' is 2 bytes: 59 + 2 = 61 with the 40 after it is over the limit.
    expect(chunkForPutRecords([{ partitionKey: 'é', data: Buffer.alloc(59) }, record(40)], limits).map((c) => c.length)).toEqual([1, 1]);
    // A record over the limit on its own is a call of its own, with no empty call before it.
    expect(chunkForPutRecords([record(150), record(10)], limits).map((c) => c.length)).toEqual([1, 1]);
    expect(chunkForPutRecords([], limits)).toEqual([]);
  });

  it("chunks at the API's limits by default", () => {
    const small = Array.from({ length: 501 }, () => ({ partitionKey: 'k', data: Buffer.alloc(1) }));
    expect(chunkForPutRecords(small).map((c) => c.length)).toEqual([500, 1]);
    const big = Array.from({ length: 6 }, () => ({ partitionKey: 'k', data: Buffer.alloc(1024 * 1024 - 1) }));
    expect(chunkForPutRecords(big).map((c) => c.length)).toEqual([5, 1]);
  });

  it('makes six attempts by default', async () => {
    kinesis.on(PutRecordsCommand).rejects(refusal());
    const error = await failureOf(new KinesisTraceSink(client, 'traces', undefined, noSleep).publish(keyed(['a'])));
    expect(kinesis).toHaveReceivedCommandTimes(PutRecordsCommand, DEFAULT_PUBLISH_BACKOFF.maxAttempts);
    expect(DEFAULT_PUBLISH_BACKOFF).toEqual({ maxAttempts: 6, baseDelayMs: 50, maxDelayMs: 1_000 });
    expect(error).toBeInstanceOf(DependencyUnavailableError);
  });

  it("reads the deadline on the wall clock by default", async () => {
    kinesis.on(PutRecordsCommand).callsFake(ok);
    const error = await failureOf(new KinesisTraceSink(client, 'traces', POLICY, noSleep).publish(keyed(['a']), { deadlineAtMs: Date.now() + 100 }));
    expect(kinesis).not.toHaveReceivedCommand(PutRecordsCommand);
    expect(error.nothingWritten).toBe(true);
  });
});
