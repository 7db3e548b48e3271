import { Batch, BODY_OVERHEAD, Deliverer } from './delivery.js';
import { gzip } from './gzip.js';
import { Ledger } from './ledger.js';
import { MAX_BODY_BYTES, MAX_TRACES_PER_BATCH } from './limits.js';
import { currentTrace, Trace } from './tracing.js';
import { FetchTransport } from './transport.js';
const encoder = new TextEncoder();
function env(name) {
    return typeof process === 'undefined' ? undefined : process.env[name] || undefined;
}
/**
 * Sends traces to `POST {baseUrl}/v1/traces/ingest`: queued (bounded by traces and bytes), then
 * sent in the background in gzip batches of at most 500 traces and 4 MiB, each under one
 * Idempotency-Key kept across its retries; or, with `serverless: true`, only inside `flush()`.
 */
export class TraceIngest {
    environment;
    workspaceSlug;
    maxBatchTraces;
    maxBodyBytes;
    options;
    ledger;
    transport;
    apiKey;
    deliverer;
    queue = [];
    queuedBytes = 0;
    oldest = 0;
    recovered = [];
    inFlight = 0;
    pumping = false;
    flushes = 0;
    closed = false;
    stopped = false;
    timer;
    listeners = new Set();
    sleepers = new Set();
    spool;
    ready;
    exitHandlers = [];
    constructor(options = {}) {
        const apiKey = options.apiKey ?? env('TRACE_INGEST_API_KEY');
        const baseUrl = options.baseUrl ?? env('TRACE_INGEST_BASE_URL');
        if (!apiKey)
            throw new TypeError('No API key: pass apiKey or set TRACE_INGEST_API_KEY');
        if (!baseUrl && !options.transport)
            throw new TypeError('No base URL: pass baseUrl or set TRACE_INGEST_BASE_URL');
        this.maxBatchTraces = options.maxBatchTraces ?? MAX_TRACES_PER_BATCH;
        this.maxBodyBytes = options.maxBodyBytes ?? MAX_BODY_BYTES;
        if (!(this.maxBatchTraces >= 1 && this.maxBatchTraces <= MAX_TRACES_PER_BATCH))
            throw new RangeError(`maxBatchTraces must be 1 to ${MAX_TRACES_PER_BATCH}`);
        if (!(this.maxBodyBytes > BODY_OVERHEAD && this.maxBodyBytes <= MAX_BODY_BYTES))
            throw new RangeError(`maxBodyBytes must be at most ${MAX_BODY_BYTES}`);
        this.options = options;
        this.environment = options.environment ?? env('TRACE_INGEST_ENVIRONMENT') ?? 'default';
        this.workspaceSlug = options.workspaceSlug ?? '';
        this.ledger = new Ledger(options.onUndelivered);
        this.transport = options.transport ?? new FetchTransport(baseUrl, options.requestTimeoutMs ?? 30_000);
        this.apiKey = apiKey;
        this.deliverer = this.makeDeliverer(() => undefined);
        this.ready = options.spoolDir === undefined ? Promise.resolve() : this.openSpool(options.spoolDir);
        if (typeof process !== 'undefined' && typeof process.on === 'function')
            this.installExitHandlers();
    }
    trace(name, optionsOrFn, maybeFn) {
        const [options, fn] = typeof optionsOrFn === 'function' ? [{}, optionsOrFn] : [optionsOrFn, maybeFn];
        return new Trace(this, name, options).run(fn);
    }
    /** A trace to end yourself (`trace.end()`), or with `using`. */
    startTrace(name, options = {}) {
        return new Trace(this, name, options);
    }
    span(name, optionsOrFn, maybeFn) {
        const trace = currentTrace();
        if (!trace)
            throw new Error('client.span() needs an open trace: call it inside client.trace(…), or use client.observe');
        return typeof optionsOrFn === 'function' ? trace.span(name, optionsOrFn) : trace.span(name, optionsOrFn, maybeFn);
    }
    /**
     * Wraps `fn` so that each call runs in a span named after it (in the current trace, or a new
     * one): its arguments become `input`, its result `output`.
     */
    observe(fn, options = {}) {
        const { name = fn.name || 'anonymous', ...spanOptions } = options;
        const openTrace = (fn2) => this.trace(name, fn2);
        return function observed(...args) {
            const inSpan = (span) => {
                span.input ??= args;
                const result = fn.apply(this, args);
                if (result instanceof Promise) {
                    return result.then((value) => {
                        span.output ??= value;
                        return value;
                    });
                }
                span.output ??= result;
                return result;
            };
            const trace = currentTrace();
            if (trace)
                return trace.span(name, { kind: 'chain', ...spanOptions }, inSpan);
            return openTrace((own) => own.span(name, { kind: 'chain', ...spanOptions }, inSpan));
        };
    }
    // --- delivery --------------------------------------------------------------------------
    /**
     * Sends everything queued and waits up to `timeoutMs` (none: until done). Resolves to what
     * happened to every trace handed over so far; `pending` counts those still on their way.
     */
    async flush(timeoutMs) {
        await this.ready;
        const deadline = timeoutMs === undefined ? undefined : performance.now() + timeoutMs;
        if (this.options.serverless) {
            await this.deliverInline(deadline);
            return this.ledger.report();
        }
        this.flushes++;
        try {
            this.kick();
            await this.until(() => this.queue.length === 0 && this.recovered.length === 0 && this.inFlight === 0, deadline);
        }
        finally {
            this.flushes--;
        }
        return this.ledger.report();
    }
    /**
     * Flushes for at most `timeoutMs` (default `shutdownTimeoutMs`) and stops. With the spool on, a
     * batch still unsent stays in it for the next start.
     */
    async shutdown(timeoutMs = this.options.shutdownTimeoutMs ?? 10_000) {
        if (this.closed)
            return this.ledger.report();
        this.closed = true;
        const report = await this.flush(timeoutMs);
        this.stopped = true;
        for (const wake of this.sleepers)
            wake();
        clearTimeout(this.timer);
        for (const [event, handler] of this.exitHandlers)
            process.off(event, handler);
        this.spool?.close();
        return report;
    }
    /** The accounting so far, without waiting. */
    report() {
        return this.ledger.report();
    }
    /** Queues a finished trace (called by `Trace.end`); never throws into the caller. */
    submit(trace) {
        try {
            this.ledger.handed++;
            if (this.closed) {
                this.ledger.drop('shut_down', 'handed over after shutdown()', [trace.traceId]);
                return undefined;
            }
            let data;
            try {
                data = encoder.encode(JSON.stringify(trace.toWire(this.options.mask)));
            }
            catch (error) {
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
                if (this.full(data.length))
                    this.ledger.drop('queue_full', 'no room before blockTimeoutMs', [trace.traceId]);
                else
                    this.push(item);
            });
        }
        catch (error) {
            console.error('[trace-ingest] could not queue a trace', error);
            return undefined;
        }
    }
    full(size) {
        return this.queue.length >= (this.options.maxQueueTraces ?? 10_000) || (this.queue.length > 0 && this.queuedBytes + size > (this.options.maxQueueBytes ?? 64 * 1024 * 1024));
    }
    push(item) {
        if (this.queue.length === 0)
            this.oldest = performance.now();
        this.queue.push(item);
        this.queuedBytes += item.data.length;
        this.kick();
    }
    batchReady() {
        return this.queue.length >= this.maxBatchTraces || this.queuedBytes + BODY_OVERHEAD >= this.maxBodyBytes;
    }
    takeBatch() {
        let size = BODY_OVERHEAD;
        let count = 0;
        while (count < this.queue.length && count < this.maxBatchTraces) {
            const next = this.queue[count].data.length + (count > 0 ? 1 : 0);
            if (count > 0 && size + next > this.maxBodyBytes)
                break;
            size += next;
            count++;
        }
        const taken = this.queue.splice(0, count);
        for (const item of taken)
            this.queuedBytes -= item.data.length;
        this.oldest = performance.now();
        return Batch.of(taken);
    }
    nextBatch() {
        const recovered = this.recovered.shift();
        if (recovered)
            return { batch: recovered, spooled: true };
        if (this.queue.length === 0)
            return undefined;
        const due = performance.now() - this.oldest >= (this.options.flushIntervalMs ?? 1_000);
        if (this.flushes > 0 || this.closed || this.batchReady() || due)
            return { batch: this.takeBatch(), spooled: false };
        return undefined;
    }
    /** Starts the background pump if it is idle (never in serverless mode). */
    kick() {
        if (this.options.serverless || this.pumping || this.stopped)
            return;
        void this.pump();
    }
    async pump() {
        this.pumping = true;
        clearTimeout(this.timer);
        try {
            await this.ready;
            // The next batch is taken and compressed while the current one is in flight, so that one
            // process keeps the connection busy (bench group sdk: delivery ÷ a bare HTTP client).
            let next = this.takeForDelivery();
            while (next) {
                const current = next;
                const delivering = this.deliverer.deliver(current.batch, current.spooled, current.compressed);
                next = this.takeForDelivery();
                try {
                    await delivering;
                }
                catch (error) {
                    this.ledger.drop('internal_error', String(error), current.batch.traceIds);
                }
                finally {
                    this.inFlight--;
                    this.notify();
                }
                next ??= this.takeForDelivery(); // a flush or a full batch may have come meanwhile
            }
        }
        finally {
            this.pumping = false;
            if (this.queue.length > 0 && !this.stopped) {
                const wait = Math.max(1, (this.options.flushIntervalMs ?? 1_000) - (performance.now() - this.oldest));
                this.timer = setTimeout(() => this.kick(), wait);
                this.timer.unref?.();
            }
            this.notify();
        }
    }
    /** The next batch due, counted in flight from now on, its gzip under way. */
    takeForDelivery() {
        if (this.stopped)
            return undefined;
        const next = this.nextBatch();
        if (!next)
            return undefined;
        this.inFlight++;
        this.notify(); // room in the queue for a caller told to block
        const compressed = gzip(next.batch.body);
        compressed.catch(() => undefined); // a failure surfaces where it is awaited
        return { ...next, compressed };
    }
    async deliverInline(deadline) {
        const deliverer = this.makeDeliverer(() => deadline);
        for (;;) {
            const recovered = this.recovered.shift();
            const batch = recovered ?? (this.queue.length > 0 ? this.takeBatch() : undefined);
            if (!batch)
                return;
            if (!(await deliverer.deliver(batch, recovered !== undefined))) {
                // Not sent by the deadline: first in line, with its key, for the next flush.
                this.recovered.unshift(batch);
                return;
            }
        }
    }
    /** A delivery core whose retry waits end at `deadline` (undefined: only at shutdown). */
    makeDeliverer(deadline) {
        return new Deliverer({
            transport: this.transport,
            apiKey: this.apiKey,
            ledger: this.ledger,
            sleep: this.sleeper(deadline),
            spool: { write: (batch) => this.spool?.write(batch), delete: (key) => this.spool?.delete(key) },
            maxRetrySeconds: this.options.maxRetrySeconds,
        });
    }
    sleeper(deadline) {
        return (seconds) => new Promise((resolve) => {
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
            timer.unref?.();
            beat.unref?.();
            this.sleepers.add(wake);
        });
    }
    /** Resolves when `done()` holds or the deadline passes; keeps the process alive meanwhile. */
    until(done, deadline) {
        if (done())
            return Promise.resolve();
        return new Promise((resolve) => {
            const check = () => {
                if (!done() && (deadline === undefined || performance.now() < deadline))
                    return;
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
    notify() {
        for (const listener of [...this.listeners])
            listener();
    }
    async openSpool(directory) {
        const { Spool } = await import('./spool.js');
        this.spool = new Spool(directory);
        for (const batch of this.spool.claimOrphans()) {
            this.recovered.push(batch);
            this.ledger.recovered += batch.traceIds.length;
        }
        if (this.recovered.length > 0)
            this.kick();
    }
    installExitHandlers() {
        // A clean exit leaves no owner file behind (unsent batches stay for the next start).
        this.onProcess('exit', () => this.spool?.close());
        if (this.options.flushOnExit ?? !this.options.serverless) {
            // beforeExit comes when the loop has nothing left; a flush gives it work, once.
            this.onProcess('beforeExit', () => {
                if (this.queue.length > 0 || this.recovered.length > 0 || this.inFlight > 0)
                    void this.shutdown();
            });
        }
        if (this.options.handleSignals) {
            for (const signal of ['SIGTERM', 'SIGINT']) {
                const handler = () => {
                    process.off(signal, handler);
                    void this.shutdown().finally(() => {
                        // Only when nobody else listens do we restore the default: exit by the signal.
                        if (process.listenerCount(signal) === 0)
                            process.kill(process.pid, signal);
                    });
                };
                this.onProcess(signal, handler);
            }
        }
    }
    onProcess(event, handler) {
        process.on(event, handler);
        this.exitHandlers.push([event, handler]);
    }
}
