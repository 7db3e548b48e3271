/**
 * How often a request's path through the ingest function returns to a module it has already left, from the
 * handler to the Kinesis PutRecords call, on both routes (`npm run measure:module-path`; docs/development.md).
 *
 * The real handler from the composition root (`composeIngest`) runs one small JSON batch and one small OTLP export,
 * AWS faked as the bench fakes it (tenancy, rate windows and S3 as in-memory ports) except that the stream is the
 * real `KinesisTraceSink` over a client whose `send` answers at once. A worker thread attached to this thread's
 * inspector steps into every statement (`Debugger.stepInto`) from the handler call to that `send`, and records at
 * every pause the module of the top frame and the function's modules waiting below it (callers, and async functions
 * awaiting it: `Debugger.setAsyncCallStackDepth`). Nothing is blackboxed: with node_modules blackboxed, V8 stepped
 * over middy's call of the handler and never paused in it; pauses outside `lambda/` are stepped through, not counted.
 * Consecutive pauses in one module are one visit. Printed per route:
 * - modules: the distinct modules of `lambda/` visited;
 * - returns to a module already left: visits to a module seen before that was not waiting below the previous visit
 *   (a callee handing back to its caller is not one), with every leaf call folded into its caller: a visit called
 *   from the one before that hands straight back to it, calling no other module (a parse, a format, a constructor);
 * - the same counting leaf calls, and the visits and revisits of the top frame's module sequence as it is.
 *
 * `--trail` prints the path with leaf calls folded, `--calls` every visit marked enter, resume or return.
 */
import { Worker } from 'node:worker_threads';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KinesisClient, PutRecordsCommand } from '@aws-sdk/client-kinesis';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { composeIngest } from '../../lambda/ingest/compose.js';
import { opentelemetry } from '../../devkit/generated/otlp-trace.js';
import { gatewayEvent, lambdaContext, liveBatch } from '../../devkit/builders/trace-builders.js';
import { fakeTenancy } from '../../devkit/fakes/fake-tenancy.js';
import { quietTelemetry } from '../../devkit/fakes/quiet-telemetry.js';

const USAGE = `Usage: npm run measure:module-path [-- --trail | --calls]

Follows one JSON batch and one OTLP export through the ingest handler to the Kinesis PutRecords send and prints,
per route, the modules of lambda/ visited and the returns to a module already left (docs/development.md).
  --trail   the path, leaf calls folded into their caller
  --calls   every visit, marked enter, resume or return`;
if (process.argv.includes('--help') || process.argv.includes('-h')) {
  console.log(USAGE);
  process.exit(0);
}

const root = fileURLToPath(new URL('../../', import.meta.url));
const self = import.meta.url;

/** The stream's client: answers every PutRecords at once, every record written. The path ends at this `send`. */
const kinesis = {
  send: function putRecordsSent(command: PutRecordsCommand) {
    const records = command.input.Records ?? [];
    return Promise.resolve({ FailedRecordCount: 0, Records: records.map((_, i) => ({ SequenceNumber: String(i), ShardId: 'shardId-000000000000' })) });
  },
} as unknown as KinesisClient;

process.env.POWERTOOLS_METRICS_DISABLED = 'true';
const { apiKey, tenancy } = fakeTenancy('measure', { minute: null, hour: null, day: null, month: null });
const handler = composeIngest({
  resources: { traceStream: 'traces' },
  clients: { kinesis },
  ports: {
    tenancy,
    rateLimiter: { reserve: async () => ({ allowed: true }), release: async () => undefined },
    overflow: { put: async (key: string) => ({ bucket: 'b', key }), delete: async () => undefined },
  },
  idempotency: false,
  ...quietTelemetry('measure'),
});

/** One trace of two spans, as an SDK sends it. */
const jsonEvent = () => gatewayEvent({ apiKey, body: Buffer.from(JSON.stringify(liveBatch(1, {}, 2))) });

/** One trace of two GenAI spans (an agent and its chat call), as an OpenTelemetry SDK exports it. */
function otlpEvent(): APIGatewayProxyEvent {
  const nanos = BigInt(Date.now()) * 1_000_000n;
  const id = (hex: string) => Uint8Array.from(Buffer.from(hex, 'hex'));
  const text = (key: string, value: string) => ({ key, value: { stringValue: value } });
  const span = (n: number, attributes: ReturnType<typeof text>[]) => ({
    traceId: id('0af7651916cd43dd8448eb211c80319c'),
    spanId: id(`000000000000000${n}`),
    parentSpanId: n === 1 ? undefined : id('0000000000000001'),
    name: n === 1 ? 'invoke_agent Support' : 'chat gpt-4o',
    kind: n === 1 ? 1 : 3,
    startTimeUnixNano: String(nanos + BigInt(n) * 1_000_000n),
    endTimeUnixNano: String(nanos + 250_000_000n),
    attributes,
    status: { code: 1 },
  });
  const body = opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest.encode({
    resourceSpans: [
      {
        resource: { attributes: [text('service.name', 'support-agent')] },
        scopeSpans: [
          {
            scope: { name: 'instrumentation', version: '1.0.0' },
            spans: [
              span(1, [text('gen_ai.operation.name', 'invoke_agent'), text('gen_ai.agent.name', 'Support')]),
              span(2, [text('gen_ai.operation.name', 'chat'), text('gen_ai.request.model', 'gpt-4o'), text('gen_ai.input.messages', '[{"role":"user","content":"hi"}]')]),
            ],
          },
        ],
      },
    ],
  } as unknown as opentelemetry.proto.collector.trace.v1.IExportTraceServiceRequest).finish();
  return gatewayEvent({ route: 'otlp', apiKey, headers: { 'Content-Type': 'application/x-protobuf' }, body: Buffer.from(body) });
}

// Runs beside this thread, which the inspector holds still at every pause while the worker records and steps on.
const TRACER = `
const { parentPort, workerData } = require('node:worker_threads');
const { Session } = require('node:inspector');
const session = new Session();
session.connectToMainThread();
let trail = null;
const urls = new Map();
session.on('Debugger.scriptParsed', ({ params }) => urls.set(params.scriptId, params.url));
const own = (url) => url.startsWith(workerData.lambda);
/** The function's modules that wait below the top frame: its callers, and the async functions awaiting it. */
function waiting({ callFrames, asyncStackTrace }) {
  const modules = new Set(callFrames.slice(1).map((frame) => urls.get(frame.location.scriptId) ?? ''));
  for (let stack = asyncStackTrace; stack; stack = stack.parent) for (const frame of stack.callFrames) modules.add(frame.url);
  return [...modules].filter(own);
}
session.on('Debugger.paused', ({ params }) => {
  const frame = params.callFrames[0];
  if (trail === null || frame === undefined) return void session.post('Debugger.resume');
  const url = urls.get(frame.location.scriptId) ?? '';
  if (url === workerData.self && frame.functionName === 'putRecordsSent') {
    parentPort.postMessage({ trail, reached: true });
    trail = null;
    return void session.post('Debugger.resume');
  }
  if (own(url)) {
    if (trail[trail.length - 1]?.module !== url) trail.push({ module: url, waiting: [] });
    trail[trail.length - 1].waiting = waiting(params);
  }
  session.post('Debugger.stepInto');
});
parentPort.on('message', (message) => {
  if (message === 'arm') trail = [];
  parentPort.postMessage(message);
});
session.post('Debugger.enable', () => session.post('Debugger.setAsyncCallStackDepth', { maxDepth: 64 }, () => parentPort.postMessage('ready')));
`;

const tracer = new Worker(TRACER, { eval: true, workerData: { self, lambda: new URL('lambda/', new URL(`file://${root}`)).href } });
const messages: unknown[] = [];
const waiters: ((message: unknown) => void)[] = [];
tracer.on('message', (message: unknown) => (waiters.shift() ?? ((m) => messages.push(m)))(message));
const next = () => new Promise<unknown>((resolve) => (messages.length > 0 ? resolve(messages.shift()) : waiters.push(resolve)));

async function invoke(event: APIGatewayProxyEvent): Promise<APIGatewayProxyResult> {
  const response = (await handler(event, lambdaContext)) as APIGatewayProxyResult;
  if (response.statusCode !== 200 || (event.path.includes('otel') && response.body !== '')) throw new Error(`refused: ${response.statusCode} ${response.body}`);
  return response;
}

interface Visit {
  module: string;
  /** The modules below it on the stack at its last pause (callers and awaiting async functions). */
  waiting: string[];
}

interface Path {
  modules: number;
  visits: number;
  /** Visits to a module seen before, whichever way: what the top frame's module sequence shows. */
  revisits: number;
  /** Visits to a module seen before that was not waiting below the previous one: entered again after it was done. */
  returns: number;
  /** {@link returns} once every leaf call (a helper that returns to its caller without calling into another module) is folded into its caller. */
  flowReturns: number;
  /** The path with leaf calls folded. */
  trail: string[];
  /** Every visit, marked `enter`, `resume` or `return`. */
  calls: string[];
}

const relativeModule = (url: string) => relative(root, fileURLToPath(url));

/** Whether `visit` is resumed from the one before: a callee handing back to the caller waiting below it. */
const resumes = (previous: Visit | undefined, visit: Visit) => previous !== undefined && previous.waiting.includes(visit.module);

/** Marks each visit `enter`, `resume` (a callee handed back) or `return` (a module seen before, entered again). */
function classify(visits: readonly Visit[]): ('enter' | 'resume' | 'return')[] {
  const seen = new Set<string>();
  return visits.map((visit, i) => {
    const kind = resumes(visits[i - 1], visit) ? 'resume' : seen.has(visit.module) ? 'return' : 'enter';
    seen.add(visit.module);
    return kind;
  });
}

/**
 * The visits with every leaf call folded into its caller: a visit called from the one before (A → B) that hands back
 * to it at once (B → A resumed) is a helper's work for A (a parse, a format, a constructor), not a step of the path.
 */
function foldLeaves(visits: readonly Visit[]): Visit[] {
  const folded: Visit[] = [];
  for (let i = 0; i < visits.length; i++) {
    const visit = visits[i] as Visit;
    const caller = folded[folded.length - 1];
    const after = visits[i + 1];
    if (caller && after && after.module === caller.module && visit.waiting.includes(caller.module) && resumes(visit, after)) {
      folded[folded.length - 1] = { module: caller.module, waiting: after.waiting };
      i++;
      continue;
    }
    folded.push(visit);
  }
  return folded;
}

/** Counts a path's modules, its revisits, and its returns to a module already left (not a callee handing back to its caller). */
export function measurePath(visits: readonly Visit[]): Path {
  const kinds = classify(visits);
  const modules = new Set(visits.map((visit) => visit.module)).size;
  const count = (list: readonly string[], kind: string) => list.filter((k) => k === kind).length;
  return {
    modules,
    visits: visits.length,
    revisits: visits.length - modules,
    returns: count(kinds, 'return'),
    flowReturns: count(classify(foldLeaves(visits)), 'return'),
    trail: foldLeaves(visits).map((visit) => relativeModule(visit.module)),
    calls: visits.map((visit, i) => `${(kinds[i] as string).padEnd(7)} ${relativeModule(visit.module)}`),
  };
}

/** Follows one request from the handler call to PutRecords. */
async function follow(event: () => APIGatewayProxyEvent): Promise<Path> {
  await invoke(event()); // warm, as a Lambda environment is after its first request
  const request = event();
  tracer.postMessage('arm');
  await next();
  // eslint-disable-next-line no-debugger -- the first pause, from which the tracer steps into the handler
  debugger;
  await invoke(request);
  const { trail, reached } = (await next()) as { trail: Visit[]; reached: boolean };
  if (!reached) throw new Error('the trace never reached PutRecords');
  return measurePath(trail);
}

await next(); // the tracer is attached
const routes = { 'JSON batch (POST /v1/traces/ingest, 1 trace × 2 spans)': jsonEvent, 'OTLP export (POST /otel/v1/traces, protobuf, 1 trace × 2 spans)': otlpEvent };
for (const [route, event] of Object.entries(routes)) {
  const path = await follow(event);
  console.log(
    `${route}: ${path.modules} modules; ${path.flowReturns} returns to a module already left, leaf calls folded into their caller ` +
      `(${path.returns} counting leaf calls; ${path.visits} visits, ${path.revisits} to a module seen before)`,
  );
  if (process.argv.includes('--trail')) console.log(path.trail.map((module, i) => `  ${String(i + 1).padStart(3)} ${module}`).join('\n'));
  if (process.argv.includes('--calls')) console.log(path.calls.map((call, i) => `  ${String(i + 1).padStart(3)} ${call}`).join('\n'));
}
await tracer.terminate();
