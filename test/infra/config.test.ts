import { Duration } from 'aws-cdk-lib';
import { DEFAULT_CONFIG, validateConfig, type TraceIngestConfig } from '../../lib/config.js';

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

  it('rejects a stage name API Gateway would refuse', () => {
    expect(() => validateConfig({ ...DEFAULT_CONFIG, stageName: 'prod stage' })).toThrow(/stageName/);
  });
});
