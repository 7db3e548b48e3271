import { fileURLToPath } from 'node:url';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { gatewayEvent, lambdaContext } from '../devkit/builders/trace-builders.js';
import { inFreshProcess } from './fresh-process.js';
import { fakedIngestHandler, realisticBatch } from './ingest-workload.js';

export interface IngestMemory {
  /** RSS after the handler module and one batch's body were loaded, before the first request. */
  rssBeforeMb: number;
  /** Peak RSS of the process over the requests. */
  peakRssMb: number;
  requests: number;
  gzipBytes: number;
  jsonBytes: number;
}

/**
 * Peak memory of full batches through the real handler, as the deployed API delivers them (gzip,
 * base64 in the event), in a fresh Node process so that the peak is the handler's own.
 */
export function measureIngestMemory(requests = 5): IngestMemory {
  return inFreshProcess<IngestMemory>(fileURLToPath(import.meta.url), ['--measure', String(requests)]);
}

async function measureHere(requests: number): Promise<IngestMemory> {
  const { handler, apiKey } = fakedIngestHandler();
  const json = realisticBatch();
  const event = gatewayEvent({ apiKey, body: json, gzip: true });
  const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);
  const rssBeforeMb = mb(process.memoryUsage().rss);
  for (let i = 0; i < requests; i++) {
    const response = (await handler(event, lambdaContext)) as APIGatewayProxyResult;
    if (response.statusCode !== 200) throw new Error(`batch refused: ${response.body}`);
  }
  return {
    rssBeforeMb,
    peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
    requests,
    gzipBytes: Buffer.byteLength(event.body ?? '', 'base64'),
    jsonBytes: Buffer.byteLength(json),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === '--measure') {
  console.log(JSON.stringify(await measureHere(Number(process.argv[3] ?? 5))));
}
