import { Batch, BODY_OVERHEAD, Deliverer, type Parked, type QueuedTrace, type Sleep } from './delivery.js';
import { gzip } from './gzip.js';
import { type DeliveryReport, Ledger, type Undelivered } from './ledger.js';
import { MAX_BODY_BYTES, MAX_TRACES_PER_BATCH } from './limits.js';
import { pickCrc32 } from './crc32.js';
import { Log, type Logger } from './log.js';
import { Spool, type SpoolSync } from './spool.js';
import { currentTrace, errorText, type Mask, type Span, type SpanOptions, Trace, type TraceOptions, type TraceSink } from './tracing.js';
import { FetchTransport, type Transport } from './transport.js';

export interface TraceIngestOptions {
  /** Default: `TRACE_INGEST_API_KEY`. */
  apiKey?: string;
  /** Default: `TRACE_INGEST_BASE_URL`. */
  baseUrl?: string;
  /** Default: `TRACE_INGEST_ENVIRONMENT`, else `"default"`. */
  environment?: string;
  /** Set on every trace (a workspace key needs it). */
  workspaceSlug?: string;
  /** No background work: traces are sent only inside `flush()`, which the handler awaits before it returns. */
  serverless?: boolean;
  /** Queue bounds; default 10,000 traces and 64 MiB. */
  maxQueueTraces?: number;
  maxQueueBytes?: number;
  /** When the queue is full: drop the newest trace (default), or make `end()`/the callback's promise wait up to `blockTimeoutMs` for room. */
  whenFull?: 'drop' | 'block';
  blockTimeoutMs?: number;
  /** A partial batch waits at most this long before it is sent; default 1,000 ms. */
  flushIntervalMs?: number;
  /** At most 500 traces and 4 MiB of JSON per batch (the service's limits); lower them if you like. */
  maxBatchTraces?: number;
  maxBodyBytes?: number;
  /** Per request; default 30,000 ms. */
  requestTimeoutMs?: number;
  /** A batch still refused after this long is dropped as `retries_exhausted`; default 600 s. */
  maxRetrySeconds?: number;
  /** How long the exit flush and `shutdown()` wait; default 10,000 ms. */
  shutdownTimeoutMs?: number;
  /**
   * A directory for the write-ahead spool (Node): every trace handed over is appended to a checksummed segment file
   * and removed once it has a final answer; after a crash (even `kill -9`) the next client started on the directory
   * delivers what was left, each batch with its original Idempotency-Key. A directory that cannot be used turns the
   * spool off with a warning.
   */
  spoolDir?: string;
  /**
   * When a trace handed over reaches the spool file: `"interval"` (default) within `spoolIntervalMs`; `"write"`
   * before `end()` (or the callback) returns; `"fsync"` that plus fsync, which also survives power loss.
   */
  spoolSync?: SpoolSync;
  /** For `spoolSync: "interval"`; default 100 ms. */
  spoolIntervalMs?: number;
  /** Where warnings go (a function, or an object with `warn` and `debug`); default `console.warn`. */
  logger?: Logger;
  /** Log every request and answer. */
  debug?: boolean;
  mask?: Mask;
  onUndelivered?: (event: Undelivered) => void;
  /** Flush on SIGTERM and SIGINT, then let the signal do what it did before. Off by default. */
  handleSignals?: boolean;
  /** Flush on `beforeExit`; default true (outside serverless mode). */
  flushOnExit?: boolean;
  transport?: Transport;
}

const encoder = new TextEncoder();

function env(name: string): string | undefined {
  return typeof process === 'undefined' ? undefined : process.env[name] || undefined;
}

/**
 * Sends traces to `POST {baseUrl}/v1/traces/ingest`: queued (bounded by traces and bytes), then
 * sent in the background in gzip batches of at most 500 traces and 4 MiB, each under one
 * Idempotency-Key kept across its retries; or, with `serverless: true`, only inside `flush()`.
 */
export class TraceIngest implements TraceSink {
  readonly environment: string;
  readonly workspaceSlug: string;
  readonly maxBatchTraces: number;
  readonly maxBodyBytes: number;
  private readonly options: TraceIngestOptions;
  private readonly ledger: Ledger;
  private readonly transport: Transport;
  private readonly apiKey: string;
  private readonly deliverer: Deliverer;
  private readonly queue: QueuedTrace[] = [];
  private queuedBytes = 0;
  private oldest = 0;
  private readonly recovered: Batch[] = [];
  /** Batches answered 409, by due time: their keys are still held by requests in progress. */
  private readonly parked: Parked[] = [];
  private inFlight = 0;
  private pumping = false;
  private flushes = 0;
  private closed = false;
  private stopped = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly listeners = new Set<() => void>();
  private readonly sleepers = new Set<() => void>();
  private spool: Spool | undefined;
  /** Traces handed over while the spool module loads (Node before 20.16 only), written once it is open. */
  private unspooled: QueuedTrace[] | undefined;
  private readonly ready: Promise<void>;
  private readonly log: Log;
  private wrapped = false;
  private lambdaWarned = false;
  private readonly exitHandlers: [string, (...args: unknown[]) => void][] = [];
  /** Traces started and not ended yet: an exit ends them, so that they are spooled or counted. */
  private readonly openTraces = new Set<Trace>();
  /** The uncaught exception that is ending the process, once seen. */
  private crash: { error: unknown } | undefined;
  private shutdownMs: number | undefined;
  private toldUndelivered = false;

  constructor(options: TraceIngestOptions = {}) {
    const apiKey = options.apiKey ?? env('TRACE_INGEST_API_KEY');
    const baseUrl = options.baseUrl ?? env('TRACE_INGEST_BASE_URL');
    if (!apiKey) throw new TypeError('No API key: pass apiKey or set TRACE_INGEST_API_KEY');
    if (!baseUrl && !options.transport) throw new TypeError('No base URL: pass baseUrl or set TRACE_INGEST_BASE_URL');
    this.maxBatchTraces = options.maxBatchTraces ?? MAX_TRACES_PER_BATCH;
    this.maxBodyBytes = options.maxBodyBytes ?? MAX_BODY_BYTES;
    if (!(this.maxBatchTraces >= 1 && this.maxBatchTraces <= MAX_TRACES_PER_BATCH)) throw new RangeError(`maxBatchTraces must be 1 to ${MAX_TRACES_PER_BATCH}`);
    if (!(this.maxBodyBytes > BODY_OVERHEAD && this.maxBodyBytes <= MAX_BODY_BYTES)) throw new RangeError(`maxBodyBytes must be at most ${MAX_BODY_BYTES}`);
    this.options = options;
    this.environment = options.environment ?? env('TRACE_INGEST_ENVIRONMENT') ?? 'default';
    this.workspaceSlug = options.workspaceSlug ?? '';
    this.log = new Log(options.logger, options.debug ?? false);
    this.ledger = new Ledger(options.onUndelivered, this.log);
    this.transport = options.transport ?? new FetchTransport(baseUrl as string, options.requestTimeoutMs ?? 30_000);
    this.apiKey = apiKey;
    this.deliverer = this.makeDeliverer(() => undefined, (parked) => this.park(parked));
    this.ready = options.spoolDir === undefined ? Promise.resolve() : this.openSpool(options.spoolDir);
    if (typeof process !== 'undefined' && typeof process.on === 'function') this.installExitHandlers();
  }

  // --- tracing ---------------------------------------------------------------------------

  /**
   * Runs `fn` inside a new trace and sends the trace when `fn` returns (or its promise settles).
   * Returns what `fn` returns; an error marks the trace `error` and is rethrown untouched.
   */
  trace<R>(name: string, fn: (trace: Trace) => R): R;
  trace<R>(name: string, options: TraceOptions, fn: (trace: Trace) => R): R;
  trace<R>(name: string, optionsOrFn: TraceOptions | ((trace: Trace) => R), maybeFn?: (trace: Trace) => R): R {
    const [options, fn] = typeof optionsOrFn === 'function' ? [{}, optionsOrFn] : [optionsOrFn, maybeFn as (trace: Trace) => R];
    return new Trace(this, name, options).run(fn);
  }

  /** A trace to end yourself (`trace.end()`), or with `using`. */
  startTrace(name: string, options: TraceOptions = {}): Trace {
    return new Trace(this, name, options);
  }

  /** Runs `fn` inside a new span of the current trace, child of the innermost open span. Throws when no trace is open. */
  span<R>(name: string, fn: (span: Span) => R): R;
  span<R>(name: string, options: SpanOptions, fn: (span: Span) => R): R;
  span<R>(name: string, optionsOrFn: SpanOptions | ((span: Span) => R), maybeFn?: (span: Span) => R): R {
    const trace = currentTrace();
    if (!trace) throw new Error('client.span() needs an open trace: call it inside client.trace(…), or use client.observe');
    return typeof optionsOrFn === 'function' ? trace.span(name, optionsOrFn) : trace.span(name, optionsOrFn, maybeFn as (span: Span) => R);
  }

  /**
   * Wraps `fn` so that each call runs in a span named after it (in the current trace, or a new
   * one): its arguments become `input`, its result `output`.
   */
  observe<A extends unknown[], R>(fn: (...args: A) => R, options: SpanOptions & { name?: string } = {}): (...args: A) => R {
    const { name = fn.name || 'anonymous', ...spanOptions } = options;
    const openTrace = (fn2: (trace: Trace) => R): R => this.trace(name, fn2);
    return function observed(this: unknown, ...args: A): R {
      const inSpan = (span: Span): R => {
        span.input ??= args;
        const result = fn.apply(this, args);
        if (result instanceof Promise) {
          return result.then((value: unknown) => {
            span.output ??= value;
            return value;
          }) as R;
        }
        span.output ??= result;
        return result;
      };
      const trace = currentTrace();
      if (trace) return trace.span(name, { kind: 'chain', ...spanOptions }, inSpan);
      return openTrace((own) => own.span(name, { kind: 'chain', ...spanOptions }, inSpan));
    };
  }

  // --- delivery --------------------------------------------------------------------------

  /**
   * Sends everything queued and waits up to `timeoutMs` (none: until done). Resolves to what
   * happened to every trace handed over so far; `pending` counts those still on their way.
   */
  async flush(timeoutMs?: number): Promise<DeliveryReport> {
    await this.ready;
    const deadline = timeoutMs === undefined ? undefined : performance.now() + timeoutMs;
    if (this.options.serverless) {
      await this.deliverInline(deadline);
      return this.ledger.report();
    }
    this.flushes++;
    try {
      this.kick();
      await this.until(() => this.settled(), deadline);
    } finally {
      this.flushes--;
    }
    return this.ledger.report();
  }

  /**
   * Flushes for at most `timeoutMs` (default `shutdownTimeoutMs`) and stops. With the spool on, a
   * batch still unsent stays in it for the next start.
   */
  async shutdown(timeoutMs: number = this.options.shutdownTimeoutMs ?? 10_000): Promise<DeliveryReport> {
    if (this.closed) return this.ledger.report();
    this.closed = true;
    this.shutdownMs = timeoutMs;
    const report = await this.flush(timeoutMs);
    this.stopped = true;
    for (const wake of this.sleepers) wake();
    clearTimeout(this.timer);
    // With traces still unsent, the exit handler stays: it says at exit what became of them.
    for (const [event, handler] of this.exitHandlers) if (report.pending === 0 || event !== 'exit') process.off(event, handler);
    this.spool?.close();
    return report;
  }

  /** The accounting so far, without waiting. */
  report(): DeliveryReport {
    return this.ledger.report();
  }

  /**
   * Wraps a Lambda handler (or any async function) so that everything its call handed over is flushed before its
   * result is returned, also when it throws (the very error is rethrown). The flush waits at most
   * `shutdownTimeoutMs`, and never past 500 ms before the invocation's own deadline when the context tells it.
   */
  wrapHandler<A extends unknown[], R>(handler: (...args: A) => R | Promise<R>): (...args: A) => Promise<Awaited<R>> {
    this.wrapped = true;
    const flushWithin = (context: unknown) => {
      const remaining = (context as { getRemainingTimeInMillis?: () => number } | null)?.getRemainingTimeInMillis;
      const limit = this.options.shutdownTimeoutMs ?? 10_000;
      return this.flush(typeof remaining === 'function' ? Math.max(0, Math.min(limit, remaining.call(context) - 500)) : limit);
    };
    return async (...args: A): Promise<Awaited<R>> => {
      let result: Awaited<R>;
      try {
        result = await handler(...args);
      } catch (error) {
        await flushWithin(args[1]);
        throw error;
      }
      await flushWithin(args[1]);
      return result;
    };
  }

  /** Called by every new trace of this client. */
  opened(trace: Trace): void {
    this.openTraces.add(trace);
  }

  /** Queues a finished trace (called by `Trace.end`); never throws into the caller. */
  submit(trace: Trace): Promise<void> | undefined {
    try {
      this.openTraces.delete(trace);
      this.ledger.handed++;
      if (!this.lambdaWarned) this.warnOutsideServerless();
      if (this.closed) {
        this.ledger.drop('shut_down', 'handed over after shutdown()', [trace.traceId]);
        return undefined;
      }
      if (typeof trace.traceId !== 'string') {
        // The service takes a UUID string (or none, then one is made here): no other type can be stored, and the
        // spool keeps ids as strings (a record holding another type ends its segment's readable part).
        this.ledger.drop('not_serialisable', `traceId must be a string (a UUID), not ${typeof trace.traceId}`, [String(trace.traceId)]);
        return undefined;
      }
      let data: Uint8Array;
      try {
        data = encoder.encode(JSON.stringify(trace.toWire(this.options.mask)));
      } catch (error) {
        this.ledger.drop('not_serialisable', String(error), [trace.traceId]);
        return undefined;
      }
      if (data.length + BODY_OVERHEAD > this.maxBodyBytes) {
        this.ledger.drop('trace_too_large', `${data.length} bytes, more than a batch may hold`, [trace.traceId]);
        return undefined;
      }
      const item = { traceId: trace.traceId, data };
      if (!this.full(data.length)) {
        this.push(item);
        return undefined;
      }
      if (this.options.whenFull !== 'block') {
        this.ledger.drop('queue_full', `queue holds ${this.queue.length} traces, ${this.queuedBytes} bytes`, [trace.traceId]);
        return undefined;
      }
      const deadline = performance.now() + (this.options.blockTimeoutMs ?? 1_000);
      return this.until(() => !this.full(data.length), deadline).then(() => {
        if (this.full(data.length)) this.ledger.drop('queue_full', 'no room before blockTimeoutMs', [trace.traceId]);
        else this.push(item);
      });
    } catch (error) {
      this.log.warn('internal', `could not queue a trace: ${String(error)}`);
      return undefined;
    }
  }

  /**
   * In AWS Lambda the process is frozen between invocations, so a background send or the exit flush may never run:
   * say so once, unless the client is in serverless mode or wraps the handler.
   */
  private warnOutsideServerless(): void {
    this.lambdaWarned = true;
    if (this.options.serverless || this.wrapped || !env('AWS_LAMBDA_FUNCTION_NAME')) return;
    this.log.warn(
      'lambda',
      'running in AWS Lambda without serverless: true: traces may wait in memory while the function is frozen, and be lost. ' +
        'Use new TraceIngest({ serverless: true }) and await client.flush() before the handler returns, or export client.wrapHandler(handler).',
    );
  }

  /** Nothing queued, recovered, in flight or set aside after a 409. */
  private settled(): boolean {
    return this.queue.length === 0 && this.recovered.length === 0 && this.inFlight === 0 && this.parked.length === 0;
  }

  private full(size: number): boolean {
    return this.queue.length >= (this.options.maxQueueTraces ?? 10_000) || (this.queue.length > 0 && this.queuedBytes + size > (this.options.maxQueueBytes ?? 64 * 1024 * 1024));
  }

  private push(item: QueuedTrace): void {
    if (this.unspooled) this.unspooled.push(item);
    else this.spool?.trace(item);
    if (this.queue.length === 0) this.oldest = performance.now();
    this.queue.push(item);
    this.queuedBytes += item.data.length;
    this.kick();
  }

  private batchReady(): boolean {
    return this.queue.length >= this.maxBatchTraces || this.queuedBytes + BODY_OVERHEAD >= this.maxBodyBytes;
  }

  private takeBatch(): Batch {
    let size = BODY_OVERHEAD;
    let count = 0;
    while (count < this.queue.length && count < this.maxBatchTraces) {
      const next = (this.queue[count] as QueuedTrace).data.length + (count > 0 ? 1 : 0);
      if (count > 0 && size + next > this.maxBodyBytes) break;
      size += next;
      count++;
    }
    const taken = this.queue.splice(0, count);
    for (const item of taken) this.queuedBytes -= item.data.length;
    this.oldest = performance.now();
    return Batch.of(taken);
  }

  private nextBatch(): { batch: Batch; spooled: boolean; resume?: Parked } | undefined {
    const parked = this.parked[0];
    if (parked && parked.due <= performance.now()) {
      this.parked.shift();
      return { batch: parked.batch, spooled: true, resume: parked };
    }
    const recovered = this.recovered.shift();
    if (recovered) return { batch: recovered, spooled: true };
    if (this.queue.length === 0) return undefined;
    const due = performance.now() - this.oldest >= (this.options.flushIntervalMs ?? 1_000);
    if (this.flushes > 0 || this.closed || this.batchReady() || due) return { batch: this.takeBatch(), spooled: false };
    return undefined;
  }

  /** Starts the background pump if it is idle (never in serverless mode). */
  private kick(): void {
    if (this.options.serverless || this.pumping || this.stopped) return;
    this.pump().catch((error: unknown) => this.log.warn('internal', `the delivery pump failed: ${String(error)}`));
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    clearTimeout(this.timer);
    try {
      await this.ready;
      // The next batch is taken and compressed while the current one is in flight, so that one
      // process keeps the connection busy (bench group sdk: delivery ÷ a bare HTTP client).
      let next = this.takeForDelivery();
      while (next) {
        const current = next;
        const delivering = this.deliverer.deliver(current.batch, current.spooled, current.compressed, current.resume);
        next = this.takeForDelivery();
        try {
          await delivering;
        } catch (error) {
          this.ledger.drop('internal_error', String(error), current.batch.traceIds);
          this.spool?.done(current.batch.key, current.batch.traceIds);
        } finally {
          this.inFlight--;
          this.notify();
        }
        next ??= this.takeForDelivery(); // a flush or a full batch may have come meanwhile
      }
    } finally {
      this.pumping = false;
      if ((this.queue.length > 0 || this.parked.length > 0) && !this.stopped) {
        const now = performance.now();
        const untilBatch = this.queue.length > 0 ? (this.options.flushIntervalMs ?? 1_000) - (now - this.oldest) : Infinity;
        const untilParked = this.parked.length > 0 ? (this.parked[0] as Parked).due - now : Infinity;
        this.timer = setTimeout(() => this.kick(), Math.max(1, Math.min(untilBatch, untilParked)));
        this.timer.unref?.();
      }
      this.notify();
    }
  }

  private park(parked: Parked): void {
    this.parked.push(parked);
    this.parked.sort((a, b) => a.due - b.due);
  }

  /** The next batch due, counted in flight from now on, its gzip under way. */
  private takeForDelivery(): { batch: Batch; spooled: boolean; compressed: Promise<Uint8Array>; resume?: Parked } | undefined {
    if (this.stopped) return undefined;
    const next = this.nextBatch();
    if (!next) return undefined;
    this.inFlight++;
    this.notify(); // room in the queue for a caller told to block
    const compressed = gzip(next.batch.body);
    compressed.catch(() => undefined); // a failure surfaces where it is awaited
    return { ...next, compressed };
  }

  private async deliverInline(deadline: number | undefined): Promise<void> {
    // The caller awaits this flush: its waits hold the process open (a script's last flush must not end mid-retry).
    const deliverer = this.makeDeliverer(() => deadline, undefined, true);
    for (;;) {
      const recovered = this.recovered.shift();
      const batch = recovered ?? (this.queue.length > 0 ? this.takeBatch() : undefined);
      if (!batch) return;
      const unsent = await deliverer.deliver(batch, recovered !== undefined);
      if (unsent.length > 0) {
        // Not sent by the deadline: first in line, each with its key, for the next flush.
        this.recovered.unshift(...unsent);
        return;
      }
    }
  }

  /**
   * A delivery core whose retry waits end at `deadline` (undefined: only at shutdown). Its waits keep the process
   * alive only when `holdProcess` (a flush the caller awaits); the background pump never holds a process open.
   */
  private makeDeliverer(deadline: () => number | undefined, park?: (parked: Parked) => void, holdProcess = false): Deliverer {
    return new Deliverer({
      park,
      transport: this.transport,
      apiKey: this.apiKey,
      ledger: this.ledger,
      sleep: this.sleeper(deadline, holdProcess),
      spool: { write: (batch) => this.spool?.batch(batch), done: (key, ids, now) => this.spool?.done(key, ids, now) },
      maxRetrySeconds: this.options.maxRetrySeconds,
      log: this.log,
    });
  }

  private sleeper(deadline: () => number | undefined, holdProcess: boolean): Sleep {
    return (seconds) =>
      new Promise<boolean>((resolve) => {
        const limit = deadline();
        if (this.stopped || (limit !== undefined && performance.now() + seconds * 1000 > limit)) {
          resolve(false);
          return;
        }
        const wake = () => {
          clearTimeout(timer);
          clearInterval(beat);
          this.sleepers.delete(wake);
          resolve(!this.stopped);
        };
        const timer = setTimeout(wake, seconds * 1000);
        const beat = setInterval(() => this.spool?.heartbeat(), 5_000);
        if (!holdProcess) timer.unref?.();
        beat.unref?.();
        this.sleepers.add(wake);
      });
  }

  /** Resolves when `done()` holds or the deadline passes; keeps the process alive meanwhile. */
  private until(done: () => boolean, deadline: number | undefined): Promise<void> {
    if (done()) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const check = () => {
        if (!done() && (deadline === undefined || performance.now() < deadline)) return;
        this.listeners.delete(check);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.listeners.delete(check);
        resolve();
      }, deadline === undefined ? 2 ** 31 - 1 : Math.max(0, deadline - performance.now()));
      this.listeners.add(check);
    });
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener();
  }

  /**
   * Opens the spool and takes back what dead processes left in it. Never rejects: a directory that cannot be used
   * turns the spool off with a warning, and delivery goes on from memory.
   */
  private openSpool(directory: string): Promise<void> {
    type NodeProcess = { getBuiltinModule?: (id: string) => unknown };
    const builtin = typeof process === 'undefined' ? undefined : (process as unknown as NodeProcess).getBuiltinModule;
    if (typeof builtin === 'function') {
      // Node ≥ 20.16: open at once, so that the first trace handed over is already spooled.
      this.startSpool(directory, builtin('node:fs') as typeof import('node:fs'), builtin('node:zlib') as typeof import('node:zlib'));
      return Promise.resolve();
    }
    this.unspooled = [];
    return Promise.all([import('node:fs'), import('node:zlib')]).then(
      ([fs, zlib]) => this.startSpool(directory, fs, zlib),
      (error: unknown) => this.spoolOff(directory, error),
    );
  }

  private startSpool(directory: string, fs: typeof import('node:fs'), zlib: typeof import('node:zlib')): void {
    try {
      const warn = (cause: string, message: string) => this.log.warn(cause, message);
      const spool = new Spool(directory, { fs, crc32: pickCrc32(zlib), sync: this.options.spoolSync, intervalMs: this.options.spoolIntervalMs, warn });
      const found = spool.recover();
      this.spool = spool;
      for (const batch of found.batches) this.recovered.push(batch);
      if (found.traces.length > 0) {
        if (this.queue.length === 0) this.oldest = performance.now();
        this.queue.unshift(...found.traces);
        for (const item of found.traces) this.queuedBytes += item.data.length;
      }
      this.ledger.recovered += found.batches.reduce((sum, batch) => sum + batch.traceIds.length, 0) + found.traces.length;
      this.ledger.tornSpoolRecords += found.tornRecords;
      this.ledger.unreadableSpoolFiles += found.unreadableFiles;
      if (found.tornRecords > 0) this.log.warn('spool:torn', `${found.tornRecords} spool file(s) in ${directory} ended in a cut-short or unusable record (a crash mid-write, or a record this SDK cannot use): the records before it were recovered`);
      for (const item of this.unspooled ?? []) spool.trace(item);
    } catch (error) {
      this.spoolOff(directory, error);
    }
    this.unspooled = undefined;
    if (this.recovered.length > 0 || this.queue.length > 0) this.kick();
  }

  private spoolOff(directory: string, error: unknown): void {
    this.spool = undefined;
    this.unspooled = undefined;
    this.log.warn('spool:off', `cannot use spoolDir ${directory} (${String(error)}): the spool is off, traces are delivered from memory only`);
  }

  private installExitHandlers(): void {
    // The monitor sees an uncaught exception before Node prints it and exits, without handling it: the process
    // still crashes with the same error and exit code (https://nodejs.org/api/process.html#event-uncaughtexceptionmonitor).
    this.onProcess('uncaughtExceptionMonitor', (error) => this.crashed(error));
    // 'exit' listeners run synchronously, also after process.exit() and an uncaught exception: the last moment to
    // write the queue to the spool (https://nodejs.org/api/process.html#event-exit). A clean exit leaves no owner
    // file behind (unsent batches stay for the next start).
    this.onProcess('exit', (code) => this.exiting(code as number));
    if (this.options.flushOnExit ?? !this.options.serverless) {
      // beforeExit comes when the loop has nothing left; a flush gives it work, once.
      this.onProcess('beforeExit', () => {
        if (!this.settled()) void this.shutdown();
      });
    }
    if (this.options.handleSignals) {
      for (const signal of ['SIGTERM', 'SIGINT'] as const) {
        const handler = () => {
          process.off(signal, handler);
          void this.shutdown().finally(() => {
            // A process killed by its signal emits no 'exit': this is the last moment to say what was not sent.
            this.tellUndelivered(signal);
            // Only when nobody else listens do we restore the default: exit by the signal.
            if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
          });
        };
        this.onProcess(signal, handler);
      }
    }
  }

  /** An uncaught exception is ending the process: the trace it came from, and every other one open, ends now. */
  private crashed(error: unknown): void {
    try {
      this.crash = { error };
      const failing = currentTrace();
      this.abandonOpenTraces((trace) => (trace === failing ? error : new Error(`the process ended on an uncaught exception (${errorText(error)}) before this ended`)));
    } catch (failure) {
      this.log.warn('internal', `could not end the open traces at an uncaught exception: ${String(failure)}`);
    }
  }

  private exiting(code: number): void {
    try {
      this.abandonOpenTraces(() => new Error(`the process exited (code ${code}) before this ended`));
      this.tellUndelivered(`process.exit(${code})`);
    } finally {
      this.spool?.close();
    }
  }

  private abandonOpenTraces(errorFor: (trace: Trace) => unknown): void {
    for (const trace of [...this.openTraces]) trace.abandon(errorFor(trace));
  }

  /** Once: how many traces handed over are still unsent, whether the spool keeps them, and why they were not sent. */
  private tellUndelivered(ending: string): void {
    const { pending } = this.ledger.report();
    if (pending === 0 || this.toldUndelivered) return;
    this.toldUndelivered = true;
    const kept = this.spool?.usable === true;
    const why: string[] = [];
    if (this.crash) why.push(`an uncaught exception (${errorText(this.crash.error)}) ended the process before they were sent`);
    else if (this.shutdownMs !== undefined) why.push(`still unsent after ${this.shutdownMs} ms of flushing at shutdown (shutdownTimeoutMs)`);
    else if (this.options.serverless) why.push('not sent by a flush() before the process ended (serverless: true sends only inside flush())');
    else if (this.options.flushOnExit === false) why.push(`the process ended (${ending}) with flushOnExit: false before they were sent`);
    else why.push(`${ending} ended the process before they were sent`);
    if (this.ledger.lastFailure) why.push(`the last attempt: ${this.ledger.lastFailure}`);
    if (!kept) why.push('set spoolDir to keep them for the next start');
    const where = kept ? `kept in the spool ${this.spool?.directory ?? ''}, the next client started on it sends them` : 'lost at exit';
    this.log.warn('exit', `${pending === 1 ? '1 trace' : `${pending} traces`} not delivered, ${where}: ${why.join('; ')}`);
  }

  private onProcess(event: string, handler: (...args: unknown[]) => void): void {
    process.on(event, handler);
    this.exitHandlers.push([event, handler]);
  }
}
