import { App, Duration, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { DEFAULT_CONFIG, validateConfig, type TraceIngestConfig } from '../../lib/config.js';
import { TraceStream } from '../../lib/constructs/trace-stream.js';

const withLanding = (landing: Partial<TraceIngestConfig['landing']>): TraceIngestConfig => ({ ...DEFAULT_CONFIG, landing: { ...DEFAULT_CONFIG.landing, ...landing } });

describe('validateConfig', () => {
  it('accepts the defaults', () => {
    expect(validateConfig(DEFAULT_CONFIG)).toBe(DEFAULT_CONFIG);
  });

  it('rejects an ingest timeout the API Gateway 29 s limit would cut off', () => {
    expect(() => validateConfig({ ...DEFAULT_CONFIG, ingest: { ...DEFAULT_CONFIG.ingest, timeout: Duration.seconds(29) } })).toThrow(/ingest.timeout/);
  });

  it('rejects a max record age the stream retention would outlive the records of', () => {
    expect(() => validateConfig(withLanding({ maxRecordAge: Duration.hours(24) }))).toThrow(/maxRecordAge must be shorter than the stream retention/);
  });

  it('rejects infinite retries (-1), which can stall a shard until the records expire', () => {
    expect(() => validateConfig(withLanding({ retryAttempts: -1 }))).toThrow(/retryAttempts/);
  });

  it('rejects a batching window over 300 s and a batch size over 10,000', () => {
    expect(() => validateConfig(withLanding({ maxBatchingWindow: Duration.seconds(301), batchSize: 10_001 }))).toThrow(/maxBatchingWindow[\s\S]*batchSize|batchSize[\s\S]*maxBatchingWindow/);
  });

  it.each([0, -1, 1.5, 36_501])('rejects a dataRetentionDays of %s, as the admin CLI and the sweeper refuse it', (days) => {
    expect(() => validateConfig({ ...DEFAULT_CONFIG, dataRetentionDays: days })).toThrow('dataRetentionDays must be a whole number of days from 1 to 36500');
  });

  it('accepts a dataRetentionDays of 1 to 36,500', () => {
    for (const days of [1, 36_500]) expect(validateConfig({ ...DEFAULT_CONFIG, dataRetentionDays: days }).dataRetentionDays).toBe(days);
  });

  it('rejects a stage name API Gateway would refuse', () => {
    expect(() => validateConfig({ ...DEFAULT_CONFIG, stageName: 'prod stage' })).toThrow(/stageName/);
  });
});

describe('stream capacity', () => {
  it('defaults to on demand and rejects a provisioned stream without a valid shard count', () => {
    expect(DEFAULT_CONFIG.streamCapacity).toEqual({ mode: 'on-demand' });
    expect(validateConfig({ ...DEFAULT_CONFIG, streamCapacity: { mode: 'provisioned', shards: 2 } }).streamCapacity).toEqual({ mode: 'provisioned', shards: 2 });
    expect(() => validateConfig({ ...DEFAULT_CONFIG, streamCapacity: { mode: 'provisioned', shards: 0 } })).toThrow(/streamShards/);
    expect(() => validateConfig({ ...DEFAULT_CONFIG, streamCapacity: { mode: 'provisioned', shards: 1.5 } })).toThrow(/streamShards/);
  });

  it('synthesizes a provisioned stream with its shard count, and an on-demand one without', () => {
    const app = new App();
    const stack = new Stack(app, 'StreamCapacity');
    new TraceStream(stack, 'Provisioned', { retentionHours: 24, capacity: { mode: 'provisioned', shards: 3 } });
    new TraceStream(stack, 'OnDemand', { retentionHours: 24, capacity: { mode: 'on-demand' } });
    const streams = Object.values(Template.fromStack(stack).findResources('AWS::Kinesis::Stream')).map((r) => (r as { Properties: Record<string, unknown> }).Properties);
    expect(streams).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ StreamModeDetails: { StreamMode: 'PROVISIONED' }, ShardCount: 3 }),
        expect.objectContaining({ StreamModeDetails: { StreamMode: 'ON_DEMAND' } }),
      ]),
    );
    expect(streams.find((s) => (s.StreamModeDetails as { StreamMode: string }).StreamMode === 'ON_DEMAND')?.ShardCount).toBeUndefined();
  });
});

describe('stream removal policy', () => {
  const policyOf = (removalPolicy?: 'destroy' | 'retain') => {
    const stack = new Stack(new App(), 'S');
    new TraceStream(stack, 'Stream', { retentionHours: 24, capacity: { mode: 'on-demand' }, ...(removalPolicy ? { removalPolicy } : {}) });
    const [stream] = Object.values(Template.fromStack(stack).findResources('AWS::Kinesis::Stream')) as { DeletionPolicy?: string }[];
    return stream?.DeletionPolicy;
  };

  it('deletes the stream with the stack by default (CDK would retain it, billing with no reader), and keeps it when asked', () => {
    expect(DEFAULT_CONFIG.streamRemovalPolicy).toBe('destroy');
    expect(policyOf()).toBe('Delete');
    expect(policyOf('destroy')).toBe('Delete');
    expect(policyOf('retain')).toBe('RetainExceptOnCreate');
    expect(() => validateConfig({ ...DEFAULT_CONFIG, streamRemovalPolicy: 'keep' as never })).toThrow(/streamRemovalPolicy/);
  });
});
