import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { MAX_DECODED_BODY_BYTES } from '../../lambda/shared/request-limits.js';
import { INGEST_ROUTE, OTLP_ROUTE } from '../../lambda/shared/service-constants.js';

/** What the smoke flow needs of a stack, deployed or local. */
export interface SmokeTarget {
  /** Base URL of the API, without a trailing slash (`https://…/prod` or `http://127.0.0.1:3000`). */
  apiUrl: string;
  /** An organization key of `orgId`, made for the smoke run. */
  apiKey: string;
  orgId: string;
  /** Rows of `orgId` with one of `runId`'s root span names in the raw traces table, as landed now. */
  landedTraces(runId: string): Promise<number>;
  /** Rows of `orgId` with one of `runId`'s root span names in the `traces` view (Athena deployed, DuckDB locally). */
  queryTracesView(runId: string): Promise<number>;
  /** Where the query ran, for the report. */
  queryEngine: string;
}

export interface SmokeCheck {
  name: string;
  passed: boolean;
  detail: string;
}

export interface SmokeOptions {
  /** How long to wait for the rows to land. */
  landingTimeoutMs?: number;
  pollIntervalMs?: number;
  log?: (check: SmokeCheck) => void;
}

/** A plain body whose base64 event is over Lambda's 6 MB: 5 MiB. */
const REFUSED_BODY_BYTES = 5 * 1024 * 1024;

/** Traces the smoke run sends and must find landed: 2 plain, 1 gzip, 1 OTLP, 1 in the body at the ceiling. */
const EXPECTED_TRACES = 5;

function batchOf(runId: string, names: string[], now: Date) {
  const timestamp = now.toISOString();
  return { traces: names.map((name) => ({ timestamp, root_span_name: `smoke-${runId}-${name}`, spans: [{ timestamp, name: 'smoke-span', kind: 'llm', input_tokens: 1 }] })) };
}

/** One JSON batch padded with spaces (valid JSON) to exactly `bytes`. */
function paddedBatch(batch: unknown, bytes: number): Buffer {
  const text = JSON.stringify(batch);
  if (Buffer.byteLength(text) > bytes) throw new Error('the batch is larger than the size asked for');
  return Buffer.from(text + ' '.repeat(bytes - Buffer.byteLength(text)));
}

/** A one-span OTLP/JSON export whose root span carries the run's name. */
function otlpExport(runId: string, now: Date): string {
  const nanos = BigInt(now.getTime()) * 1_000_000n;
  const hex = (bytes: number) => randomUUID().replaceAll('-', '').padEnd(bytes * 2, '0').slice(0, bytes * 2);
  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'smoke' } }] },
        scopeSpans: [
          {
            scope: { name: 'smoke' },
            spans: [{ traceId: hex(16), spanId: hex(8), name: `smoke-${runId}-otlp`, kind: 1, startTimeUnixNano: String(nanos), endTimeUnixNano: String(nanos + 1_000_000n) }],
          },
        ],
      },
    ],
  });
}

/**
 * The first-deploy check: the assumptions no local test can prove, tried against the stack. Posts a
 * plain, a gzip and an OTLP batch, a body exactly at the request-size ceiling and one a byte over it,
 * waits for the rows to land, and runs one query over the `traces` view. Returns every check, passed or not.
 */
export async function runSmoke(target: SmokeTarget, options: SmokeOptions = {}): Promise<SmokeCheck[]> {
  const checks: SmokeCheck[] = [];
  const record = (name: string, passed: boolean, detail: string) => {
    const check = { name, passed, detail };
    checks.push(check);
    options.log?.(check);
  };
  const runId = randomUUID().slice(0, 8);
  const now = new Date();
  const post = async (path: string, body: Buffer | string, headers: Record<string, string>) => {
    try {
      const response = await fetch(`${target.apiUrl}${path}`, { method: 'POST', headers: { 'X-API-Key': target.apiKey, ...headers }, body });
      return { status: response.status, retryAfter: response.headers.get('retry-after'), text: await response.text() };
    } catch (error) {
      return { status: 0, retryAfter: null, text: `no answer: ${(error as Error).message}` };
    }
  };
  const expectAccepted = async (name: string, path: string, body: Buffer | string, headers: Record<string, string>, accepted?: number) => {
    const { status, text } = await post(path, body, headers);
    const ok = status === 200 && (accepted === undefined || (JSON.parse(text) as { accepted?: number }).accepted === accepted);
    record(name, ok, `${status} ${text.slice(0, 200)}`);
  };
  const json = { 'Content-Type': 'application/json' };

  await expectAccepted('plain JSON batch accepted', INGEST_ROUTE.path, JSON.stringify(batchOf(runId, ['plain-1', 'plain-2'], now)), json, 2);
  await expectAccepted(
    'gzip JSON batch accepted (the gateway inflates it; the function reads it either way)',
    INGEST_ROUTE.path,
    gzipSync(JSON.stringify(batchOf(runId, ['gzip'], now))),
    { ...json, 'Content-Encoding': 'gzip' },
    1,
  );
  await expectAccepted('OTLP/JSON export accepted, gzip', OTLP_ROUTE.path, gzipSync(otlpExport(runId, now)), { ...json, 'Content-Encoding': 'gzip' });
  await expectAccepted(
    `body of exactly ${MAX_DECODED_BODY_BYTES} bytes (the ceiling) accepted`,
    INGEST_ROUTE.path,
    paddedBatch(batchOf(runId, ['ceiling'], now), MAX_DECODED_BODY_BYTES),
    json,
    1,
  );
  const over = await post(INGEST_ROUTE.path, paddedBatch(batchOf(runId, ['over'], now), MAX_DECODED_BODY_BYTES + 1), json);
  record(
    `body of ${MAX_DECODED_BODY_BYTES + 1} bytes refused 413 batch_too_large, not to be retried`,
    over.status === 413 && over.text.includes('"batch_too_large"'),
    `${over.status} ${over.text.slice(0, 200)}`,
  );
  // Lambda refuses this event before the function runs; AWS does not document the gateway's answer (docs/deploy.md "One ceiling").
  const refused = await post(INGEST_ROUTE.path, paddedBatch(batchOf(runId, ['refused'], now), REFUSED_BODY_BYTES), json);
  record(
    `body of ${REFUSED_BODY_BYTES} bytes (an event Lambda refuses) answered 4xx/5xx without Retry-After`,
    refused.status >= 400 && refused.retryAfter === null,
    `${refused.status}${refused.retryAfter === null ? '' : ` Retry-After: ${refused.retryAfter}`} ${refused.text.slice(0, 200)}`,
  );

  const deadline = Date.now() + (options.landingTimeoutMs ?? 120_000);
  let landed: number;
  for (;;) {
    landed = await target.landedTraces(runId).catch(() => 0);
    if (landed >= EXPECTED_TRACES || Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, options.pollIntervalMs ?? 2_000));
  }
  record(`the ${EXPECTED_TRACES} accepted traces landed as Parquet`, landed === EXPECTED_TRACES, `${landed} of ${EXPECTED_TRACES} found`);

  try {
    const counted = await target.queryTracesView(runId);
    record(`${target.queryEngine} query over the traces view finds them`, counted === EXPECTED_TRACES, `${counted} rows`);
  } catch (error) {
    record(`${target.queryEngine} query over the traces view finds them`, false, (error as Error).message);
  }
  return checks;
}

/** The report a person reads: one line per check, then the verdict. */
export function smokeReport(checks: readonly SmokeCheck[]): string {
  const lines = checks.map((check) => `${check.passed ? 'PASS' : 'FAIL'}  ${check.name}: ${check.detail}`);
  const failed = checks.filter((check) => !check.passed).length;
  lines.push(failed === 0 ? `All ${checks.length} checks passed.` : `${failed} of ${checks.length} checks FAILED.`);
  return lines.join('\n');
}
