import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { gatewayEvent, lambdaContext } from '../test/support/trace-builders.js';
import { fakedIngestHandler, realisticBatch } from './ingest.js';

export interface IngestMemory {
  /** RSS after the handler module and one batch's body were loaded, before the first request. */
  rssBeforeMb: number;
  /** Peak RSS of the process over the requests. */
  peakRssMb: number;
  requests: number;
  gzipBytes: number;
  jsonBytes: number;
}

const here = path.dirname(fileURLToPath(import.meta.url));

/**
 * Peak memory of full batches through the real handler, as the deployed API delivers them (gzip,
 * base64 in the event), in a fresh Node process so that the peak is the handler's own.
 */
export function measureIngestMemory(requests = 5): IngestMemory {
  const result = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--measure', String(requests)], {
    cwd: path.resolve(here, '..'),
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`ingest memory measurement failed: ${result.stderr}`);
  return JSON.parse(result.stdout.trim().split('\n').pop() ?? '') as IngestMemory;
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
