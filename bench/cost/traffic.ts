import { createHash, randomUUID } from 'node:crypto';
import type { APIGatewayProxyResult } from 'aws-lambda';
import type { StreamRecord } from '../../lambda/ingest/core/publish/ports.js';
import { PartitionChunks } from '../../lambda/ingest/core/publish/publish-traces.js';
import { type InlineTraceRecord, compressRecordJson, decodeTraceRecord, isReferenceRecord } from '../../lambda/shared/domain/trace-record.js';
import { gatewayEvent, lambdaContext } from '../../devkit/builders/trace-builders.js';
import { cpuMicrosAsync } from '../engines-util.js';
import { fakedIngestHandler, realisticBatch } from '../ingest-workload.js';

/** A traffic shape of the model: how many organizations send, and how fast each. */
export interface TrafficShape {
  name: string;
  organizations: number;
  tracesPerSecondPerOrganization: number;
}

export const SHAPES: readonly TrafficShape[] = [
  { name: '1,000 orgs × 1 trace/s', organizations: 1000, tracesPerSecondPerOrganization: 1 },
  { name: '1 org × 1,000 traces/s', organizations: 1, tracesPerSecondPerOrganization: 1000 },
];

/** Traces per request in the model (the figure). */
export const TRACES_PER_REQUEST = 100;

/** One record as it sits on its shard: what the landing is given, plus when it was accepted. */
export interface SimulatedRecord {
  acceptedAtMs: number;
  orgId: string;
  shard: number;
  data: Buffer;
  /** Bytes of the record on the stream (data + partition key), what Kinesis bills and limits. */
  streamBytes: number;
}

/** What the real ingest handler does with one request of the bench's realistic traces. */
export interface IngestSample {
  /** The records it published, decoded: templates for the simulated traffic. */
  templates: InlineTraceRecord[];
  /** Handler CPU per request of {@link TRACES_PER_REQUEST} traces, fastest of a few (µs, one core). */
  cpuMicrosPerRequest: number;
  /** Bytes of a request body (JSON, uncompressed). */
  requestBodyBytes: number;
}

/**
 * Runs the real ingest handler (in-memory fakes of AWS) on requests of {@link TRACES_PER_REQUEST} traces cut from
 * the bench's realistic batch (`bench/ingest-workload.ts`: 8 spans and chat-style input/output per trace): the records it
 * publishes are the templates of the simulated traffic, its CPU the ingest function's compute.
 */
export async function sampleIngest(rounds = 6): Promise<IngestSample> {
  const published: StreamRecord[] = [];
  const { handler, apiKey } = fakedIngestHandler((records) => published.push(...records));
  // Stamped now: the ingest refuses timestamps too far in the past, and the simulated traffic restamps every record anyway.
  const traces = (JSON.parse(realisticBatch()) as { traces: unknown[] }).traces.slice(0, TRACES_PER_REQUEST);
  const body = JSON.stringify({ traces });
  const samples: number[] = [];
  for (let round = 0; round < rounds; round++) {
    published.length = 0;
    const cpu = await cpuMicrosAsync(async () => {
      const response = (await handler(gatewayEvent({ apiKey, body }), lambdaContext)) as APIGatewayProxyResult;
      if (response.statusCode !== 200) throw new Error(`cost model: the sample request was refused: ${response.body}`);
    });
    if (round > 0) samples.push(cpu);
  }
  if (published.length !== traces.length) throw new Error(`cost model: the sample request published ${published.length} of ${traces.length} traces`);
  const templates = published.map((record) => {
    const decoded = decodeTraceRecord(record.data);
    if (isReferenceRecord(decoded)) throw new Error('cost model: a realistic trace went by reference');
    return decoded;
  });
  return { templates, cpuMicrosPerRequest: Math.min(...samples), requestBodyBytes: Buffer.byteLength(body) };
}

/**
 * Kinesis puts a record on the shard whose hash key range holds the MD5 of its partition key; a provisioned stream
 * splits the 128-bit range evenly (https://docs.aws.amazon.com/streams/latest/dev/key-concepts.html).
 */
export function shardOf(partitionKey: string, shards: number): number {
  const top = createHash('md5').update(partitionKey).digest().readUInt32BE(0);
  return Math.floor((top / 2 ** 32) * shards);
}

/** A small deterministic generator, so every run of the model sees the same traffic. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

/**
 * The records of `seconds` of steady traffic from `startMs`: every organization sends a request of
 * {@link TRACES_PER_REQUEST} traces every `100 / rate` seconds, the organizations' phases spread evenly over that
 * interval (with a little jitter), each trace a record built from the sample's templates with its own trace id,
 * the organization, request id and times of its request, gzip-encoded as the ingest function encodes it, on the
 * shard its partition key picks.
 * `recordOrganization` writes that organization into every record instead (the records keep their own in
 * `orgId`): the landing then groups by shard, batch and hour only, as a landing of shared objects would.
 */
/** How ingest picks partition keys: per trace (the trace id, before issue 20) or per request chunk (`PartitionChunks`, since). */
export type Partitioning = 'trace' | 'request';

export function simulatedTraffic(
  shape: TrafficShape,
  sample: IngestSample,
  shards: number,
  startMs: number,
  seconds: number,
  { partitioning = 'request', recordOrganization }: { partitioning?: Partitioning; recordOrganization?: string } = {},
): SimulatedRecord[] {
  const random = seededRandom(20);
  const intervalMs = (TRACES_PER_REQUEST / shape.tracesPerSecondPerOrganization) * 1000;
  const records: SimulatedRecord[] = [];
  for (let org = 0; org < shape.organizations; org++) {
    const orgId = `org-${String(org).padStart(4, '0')}`;
    const phase = (org / shape.organizations) * intervalMs;
    for (let at = startMs + phase + random() * Math.min(50, intervalMs / 10); at < startMs + seconds * 1000; at += intervalMs) {
      const requestId = randomUUID();
      const chunks = new PartitionChunks(requestId);
      const receivedAt = new Date(at).toISOString().replace('Z', '000Z');
      for (let i = 0; i < TRACES_PER_REQUEST; i++) {
        const template = sample.templates[i % sample.templates.length]!;
        const traceId = randomUUID();
        const record: InlineTraceRecord = {
          v: template.v,
          context: { ...template.context, org_id: recordOrganization ?? orgId, request_id: requestId, received_at: receivedAt, record_id: `${requestId}/${i}` },
          trace: { ...template.trace, trace_id: traceId, timestamp: new Date(at - 2000).toISOString() },
        };
        const data = compressRecordJson(JSON.stringify(record));
        const partitionKey = partitioning === 'trace' ? traceId : chunks.keyFor(data.byteLength);
        records.push({ acceptedAtMs: at, orgId, shard: shardOf(partitionKey, shards), data, streamBytes: data.byteLength + partitionKey.length });
      }
    }
  }
  return records.sort((a, b) => a.acceptedAtMs - b.acceptedAtMs);
}
