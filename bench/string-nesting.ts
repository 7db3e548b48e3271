import { fileURLToPath } from 'node:url';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { MAX_DECODED_BODY_BYTES } from '../lambda/ingest/http/decode-body.js';
import { landRecords } from '../lambda/landing/land-records.js';
import { MAX_JSON_CONTAINERS, MAX_JSON_TEXT_DEPTH } from '../lambda/shared/domain/json-limits.js';
import type { AcceptedTrace } from '../lambda/shared/domain/trace.js';
import { encodeTraceRecord } from '../lambda/shared/domain/trace-record.js';
import { gatewayEvent, lambdaContext, liveTrace } from '../devkit/builders/trace-builders.js';
import { acceptedTrace, landingRecord, traceContext } from '../devkit/builders/landing-builders.js';
import { inFreshProcess } from './fresh-process.js';
import { fakedIngestHandler } from './ingest-workload.js';
import type { BenchResult } from './types.js';

/**
 * The worst JSON text held in a string that the limits let through (docs/hardening.md "JSON structure
 * limits"): every `[` the body may hold, as arrays nested to the depth limit side by side, plus text to fill
 * the decoded body to its ceiling. Validation parses it in `input`, the landing in `attributes` (for `tags`).
 */
const PLACEHOLDER = '"@@WORST@@"';
const HEADROOM_BYTES = 4_096;

const countBrackets = (text: string) => text.split('[').length - 1 + text.split('{').length - 1;

/** Fills `skeleton`'s placeholder with the worst JSON text: the body then holds MAX_JSON_CONTAINERS brackets and nearly MAX_DECODED_BODY_BYTES. */
function worstBody(skeleton: string, opening: string, closing: string): { body: string; brackets: number } {
  const unitDepth = MAX_JSON_TEXT_DEPTH - 1 - countBrackets(opening);
  const unit = '['.repeat(unitDepth) + ']'.repeat(unitDepth);
  const budget = MAX_JSON_CONTAINERS - countBrackets(skeleton) - countBrackets(opening) + countBrackets(PLACEHOLDER);
  const units = Math.floor(budget / unitDepth);
  const nesting = Array(units).fill(unit).join(',');
  const withoutFill = skeleton.length - PLACEHOLDER.length + JSON.stringify(`${opening}${nesting},""${closing}`).length;
  const fill = 'x'.repeat(MAX_DECODED_BODY_BYTES - HEADROOM_BYTES - withoutFill);
  const text = `${opening}${nesting},"${fill}"${closing}`;
  const body = skeleton.replace(PLACEHOLDER, () => JSON.stringify(text));
  return { body, brackets: countBrackets(body) };
}

interface Measured {
  peakMb: number;
  beforeMb: number;
  seconds: number;
  bodyBytes: number;
  brackets: number;
  outcome: string;
}

const peakMb = () => process.resourceUsage().maxRSS / 1024;

/** The ingest handler (AWS faked) given one gzip request whose span `input` holds the worst text: accepted and stored. */
async function measureIngest(): Promise<Measured> {
  const { handler, apiKey, stats } = fakedIngestHandler();
  const trace = liveTrace({}, 1) as { spans: { input: string }[] };
  trace.spans[0]!.input = '@@WORST@@';
  const { body, brackets } = worstBody(JSON.stringify({ traces: [trace] }), '[', ']');
  const event = gatewayEvent({ apiKey, body, gzip: true });
  const bodyBytes = Buffer.byteLength(body);
  const beforeMb = peakMb();
  const started = performance.now();
  const response = (await handler(event, lambdaContext)) as APIGatewayProxyResult;
  const seconds = (performance.now() - started) / 1000;
  const { accepted } = JSON.parse(response.body) as { accepted?: number };
  if (response.statusCode !== 200 || accepted !== 1 || stats.published !== 1) throw new Error(`the worst allowed input was not stored: ${response.statusCode} ${response.body.slice(0, 300)}`);
  return { peakMb: peakMb(), beforeMb, seconds, bodyBytes, brackets, outcome: 'accepted and published' };
}

/** The landing given one record (by reference, as a trace this large travels) whose span `attributes` hold `tags` and the worst text. */
async function measureLanding(): Promise<Measured> {
  const spec = acceptedTrace({}, 1);
  spec.spans[0]!.attributes = '@@WORST@@';
  const { body: traceJson, brackets } = worstBody(JSON.stringify(spec), '{"tags":["a"],"x":[', ']}');
  const trace = JSON.parse(traceJson) as AcceptedTrace;
  const stored = encodeTraceRecord({ v: 1, context: traceContext(), trace });
  const record = encodeTraceRecord({ v: 1, context: traceContext({ record_id: 'req/0' }), ref: { bucket: 'b', key: 'k', bytes: stored.byteLength, trace_id: trace.trace_id } });
  const beforeMb = peakMb();
  const started = performance.now();
  const summary = await landRecords({ store: { putObject: async () => undefined, getObject: async () => stored } }, [landingRecord(1, record)]);
  const seconds = (performance.now() - started) / 1000;
  if (summary.rows.spans !== 1) throw new Error(`the record did not land: ${JSON.stringify(summary)}`);
  return { peakMb: peakMb(), beforeMb, seconds, bodyBytes: traceJson.length, brackets, outcome: 'landed, its tags parsed' };
}

/** `npm run bench -- string-nesting`: each side in a fresh process, so that its peak is its own. */
export async function runStringNestingBench(): Promise<BenchResult[]> {
  const { DEFAULT_CONFIG } = await import('../lib/config.js');
  const script = fileURLToPath(import.meta.url);
  const sides = [
    { side: 'ingest', memoryMb: DEFAULT_CONFIG.ingest.memorySize, where: 'a span `input`, sent gzip to the handler (AWS faked)' },
    { side: 'landing', memoryMb: DEFAULT_CONFIG.landing.memorySize, where: 'a span `attributes` with `tags`, one record by reference' },
  ] as const;
  return sides.flatMap(({ side, memoryMb, where }): BenchResult[] => {
    const m = inFreshProcess<Measured>(script, ['--measure', side]);
    const peak = Math.round(m.peakMb);
    const input =
      `${where}: ${m.brackets.toLocaleString('en-US')} brackets (limit ${MAX_JSON_CONTAINERS.toLocaleString('en-US')}) ` +
      `nested ${MAX_JSON_TEXT_DEPTH} deep side by side, ${(m.bodyBytes / 1024 / 1024).toFixed(1)} MiB decoded; ${m.outcome}`;
    return [
      {
        group: 'string-nesting',
        metric: `${side}: peak RSS for the worst string-embedded JSON the limits allow`,
        value: peak,
        unit: 'MB',
        baseline: memoryMb,
        ratio: Math.round((peak / memoryMb) * 100) / 100,
        target: '<= 0.6',
        note: `${input}; peak RSS before ${Math.round(m.beforeMb)} MB; baseline is the function's memory`,
      },
      { group: 'string-nesting', metric: `${side}: wall time for the same input`, value: Math.round(m.seconds * 1000), unit: 'ms', note: input },
    ];
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === '--measure') {
  const measured = process.argv[3] === 'landing' ? await measureLanding() : await measureIngest();
  console.log(JSON.stringify(measured));
}
