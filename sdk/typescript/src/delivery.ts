import { gzip } from './gzip.js';
import type { Ledger } from './ledger.js';
import type { Log } from './log.js';
import { type Answer, decide, rejectedTraces } from './policy.js';
import { type Transport, USER_AGENT } from './transport.js';

const encoder = new TextEncoder();
const PREFIX = encoder.encode('{"traces":[');
const SUFFIX = encoder.encode(']}');
const COMMA = encoder.encode(',');
/** Bytes a body adds around its traces. */
export const BODY_OVERHEAD = PREFIX.length + SUFFIX.length;

/** One serialised trace. */
export interface QueuedTrace {
  traceId: string;
  data: Uint8Array;
}

/** Up to 500 traces under one Idempotency-Key, chosen when the batch is formed and kept across every retry of it. */
export class Batch {
  constructor(
    readonly key: string,
    readonly traceIds: readonly string[],
    readonly body: Uint8Array,
    private readonly items?: readonly QueuedTrace[],
  ) {}

  static of(traces: readonly QueuedTrace[], key: string = crypto.randomUUID()): Batch {
    let size = BODY_OVERHEAD + Math.max(0, traces.length - 1);
    for (const trace of traces) size += trace.data.length;
    const body = new Uint8Array(size);
    body.set(PREFIX, 0);
    let at = PREFIX.length;
    traces.forEach((trace, index) => {
      if (index > 0) body.set(COMMA, at++);
      body.set(trace.data, at);
      at += trace.data.length;
    });
    body.set(SUFFIX, at);
    return new Batch(key, traces.map((trace) => trace.traceId), body, traces);
  }

  /** The serialised traces (read back out of the body for a batch recovered from the spool). */
  traces(): QueuedTrace[] {
    if (this.items) return [...this.items];
    const decoded = (JSON.parse(new TextDecoder().decode(this.body)) as { traces: unknown[] }).traces;
    return decoded.map((trace, index) => ({ traceId: this.traceIds[index] as string, data: encoder.encode(JSON.stringify(trace)) }));
  }
}

/**
 * A batch set aside until `due` (a `performance.now()` time) because its key is still held by a
 * request in progress (409): other batches need not wait behind it.
 */
export interface Parked {
  batch: Batch;
  due: number;
  attempt: number;
  startedSeconds: number;
}

/** Where batches wait on disk until their final answer (the spool). */
export interface BatchStore {
  /** On disk before the batch's first request. */
  write(batch: Batch): void;
  /** `key`'s batch is closed; `ids` have a final answer (empty for a batch split into parts, which is written at once). */
  done(key: string, ids: readonly string[], now?: boolean): void;
}

/** Waits that many seconds; resolves false when delivery must stop (the batch stays pending). */
export type Sleep = (seconds: number) => Promise<boolean>;

export interface DelivererOptions {
  transport: Transport;
  apiKey: string;
  ledger: Ledger;
  sleep: Sleep;
  spool?: BatchStore | undefined;
  maxRetrySeconds?: number;
  clock?: () => number;
  jitter?: () => number;
  /** Sets aside a batch answered 409; without it the core waits for the batch itself. */
  park?: (parked: Parked) => void;
  log?: Log;
}

/**
 * Sends one batch until it has a final answer, splitting it where the service says it can never
 * fit, and accounts for every trace it carried.
 */
export class Deliverer {
  private readonly maxRetrySeconds: number;
  private readonly clock: () => number;
  private readonly jitter: () => number;

  constructor(private readonly options: DelivererOptions) {
    this.maxRetrySeconds = options.maxRetrySeconds ?? 600;
    this.clock = options.clock ?? (() => performance.now() / 1000);
    this.jitter = options.jitter ?? Math.random;
  }

  /**
   * Sends `batch` (and its parts, if split) to a final answer. Returns what a deadline stopped before
   * its answer, empty when nothing: the batch itself, or the parts of it still unsent once it was split
   * (never the whole again, whose other parts may be stored); their traces stay pending (and spooled),
   * each part with its own key. Never throws: a failure of our own (a spool that cannot be written,
   * say) drops what it had not settled yet as `internal_error`, so no trace is left unaccounted for.
   * `compressed` is its gzip body when the caller already made it (while the previous batch was in flight).
   */
  async deliver(batch: Batch, spooled = false, compressed?: Promise<Uint8Array>, resume?: Parked): Promise<Batch[]> {
    const work = [batch];
    try {
      if (this.options.spool && !spooled && !resume) this.options.spool.write(batch);
      while (work.length > 0) {
        const current = work[0] as Batch;
        const first = current === batch;
        const parts = await this.send(current, first ? compressed : undefined, first ? resume : undefined);
        if (parts === undefined) return [...work];
        work.splice(0, 1, ...parts);
      }
    } catch (error) {
      this.options.ledger.drop('internal_error', String(error), work.flatMap((part) => part.traceIds));
      for (const part of work) this.forget(part);
    }
    return [];
  }

  private async send(batch: Batch, prepared?: Promise<Uint8Array>, resume?: Parked): Promise<Batch[] | undefined> {
    const { transport, apiKey, ledger, sleep } = this.options;
    const compressed = await (prepared ?? gzip(batch.body));
    const headers = {
      'Content-Type': 'application/json',
      'Content-Encoding': 'gzip',
      'X-API-Key': apiKey,
      'Idempotency-Key': batch.key,
      'User-Agent': USER_AGENT,
    };
    const started = resume?.startedSeconds ?? this.clock();
    const { log } = this.options;
    const target = transport.url === undefined ? 'the service' : `POST ${transport.url}`;
    for (let attempt = resume?.attempt ?? 0; ; attempt++) {
      log?.debug(`POST ${transport.url ?? ''} Idempotency-Key ${batch.key}: ${batch.traceIds.length} traces, ${batch.body.length} bytes (${compressed.length} gzip), attempt ${attempt + 1}`);
      const answer = await transport.post(compressed, headers);
      const decision = decide(answer, batch.traceIds.length, attempt, this.jitter());
      log?.debug(`answer to ${batch.key}: ${answer.status ?? answer.failure} ${JSON.stringify(answer.body)} -> ${decision.action}${decision.action === 'retry' ? ` in ${decision.delaySeconds.toFixed(3)} s` : ''}`);
      if (answer.status === null) {
        ledger.lastFailure = `could not reach ${transport.url ?? 'the service'} (${answer.failure ?? 'network error'})`;
        log?.warn('connection', `${ledger.lastFailure}: check baseUrl; retrying with the same Idempotency-Key`);
      } else if (decision.action === 'retry') {
        ledger.lastFailure = `${target} answered ${answer.status} (${decision.reason})`;
      }
      switch (decision.action) {
        case 'delivered':
          this.settleDelivered(batch, answer);
          return [];
        case 'final': {
          // The URL and the status tell a base URL that names a route (404) from a refusal of the traces.
          const where = transport.url === undefined ? '' : `${target} answered ${answer.status}`;
          ledger.reject(decision.reason, [decision.detail, where].filter(Boolean).join('; '), batch.traceIds);
          this.forget(batch);
          return [];
        }
        case 'split':
          return this.split(batch);
        case 'retry':
          if (this.clock() + decision.delaySeconds - started > this.maxRetrySeconds) {
            ledger.drop('retries_exhausted', `still ${decision.reason} after ${this.maxRetrySeconds} s`, batch.traceIds);
            this.forget(batch);
            return [];
          }
          ledger.retry(decision.reason);
          if (answer.status === 409 && this.options.park) {
            this.options.park({ batch, due: performance.now() + decision.delaySeconds * 1000, attempt: attempt + 1, startedSeconds: started });
            return [];
          }
          if (!(await sleep(decision.delaySeconds))) return undefined;
      }
    }
  }

  private settleDelivered(batch: Batch, answer: Answer): void {
    const rejected = rejectedTraces(answer.body, batch.traceIds.length);
    for (const { index, code, detail } of rejected) this.options.ledger.reject(code, detail, [batch.traceIds[index] as string]);
    this.options.ledger.sent += batch.traceIds.length - rejected.length;
    this.options.ledger.lastFailure = undefined;
    this.forget(batch);
  }

  private split(batch: Batch): Batch[] {
    const traces = batch.traces();
    const middle = Math.ceil(traces.length / 2);
    const halves = [Batch.of(traces.slice(0, middle)), Batch.of(traces.slice(middle))];
    // The halves are on disk before the whole goes: a kill in between resends traces the service
    // refused as a whole, never loses them.
    for (const half of halves) this.options.spool?.write(half);
    this.options.spool?.done(batch.key, [], true);
    return halves;
  }

  private forget(batch: Batch): void {
    this.options.spool?.done(batch.key, batch.traceIds);
  }
}
