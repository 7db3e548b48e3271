import { gzip } from './gzip.js';
import { decide, rejectedTraces } from './policy.js';
import { USER_AGENT } from './transport.js';
const encoder = new TextEncoder();
const PREFIX = encoder.encode('{"traces":[');
const SUFFIX = encoder.encode(']}');
const COMMA = encoder.encode(',');
/** Bytes a body adds around its traces. */
export const BODY_OVERHEAD = PREFIX.length + SUFFIX.length;
/** Up to 500 traces under one Idempotency-Key, chosen when the batch is formed and kept across every retry of it. */
export class Batch {
    key;
    traceIds;
    body;
    items;
    constructor(key, traceIds, body, items) {
        this.key = key;
        this.traceIds = traceIds;
        this.body = body;
        this.items = items;
    }
    static of(traces, key = crypto.randomUUID()) {
        let size = BODY_OVERHEAD + Math.max(0, traces.length - 1);
        for (const trace of traces)
            size += trace.data.length;
        const body = new Uint8Array(size);
        body.set(PREFIX, 0);
        let at = PREFIX.length;
        traces.forEach((trace, index) => {
            if (index > 0)
                body.set(COMMA, at++);
            body.set(trace.data, at);
            at += trace.data.length;
        });
        body.set(SUFFIX, at);
        return new Batch(key, traces.map((trace) => trace.traceId), body, traces);
    }
    /** The serialised traces (read back out of the body for a batch recovered from the spool). */
    traces() {
        if (this.items)
            return [...this.items];
        const decoded = JSON.parse(new TextDecoder().decode(this.body)).traces;
        return decoded.map((trace, index) => ({ traceId: this.traceIds[index], data: encoder.encode(JSON.stringify(trace)) }));
    }
}
/**
 * Sends one batch until it has a final answer, splitting it where the service says it can never
 * fit, and accounts for every trace it carried.
 */
export class Deliverer {
    options;
    maxRetrySeconds;
    clock;
    jitter;
    constructor(options) {
        this.options = options;
        this.maxRetrySeconds = options.maxRetrySeconds ?? 600;
        this.clock = options.clock ?? (() => performance.now() / 1000);
        this.jitter = options.jitter ?? Math.random;
    }
    /**
     * Sends `batch` (and its parts, if split) to a final answer; false when a deadline stopped it.
     * `compressed` is its gzip body when the caller already made it (while the previous batch was in flight).
     */
    async deliver(batch, spooled = false, compressed) {
        if (this.options.spool && !spooled)
            this.options.spool.write(batch);
        const work = [batch];
        while (work.length > 0) {
            const current = work.shift();
            const parts = await this.send(current, current === batch ? compressed : undefined);
            if (parts === undefined)
                return false;
            work.unshift(...parts);
        }
        return true;
    }
    async send(batch, prepared) {
        const { transport, apiKey, ledger, sleep } = this.options;
        const compressed = await (prepared ?? gzip(batch.body));
        const headers = {
            'Content-Type': 'application/json',
            'Content-Encoding': 'gzip',
            'X-API-Key': apiKey,
            'Idempotency-Key': batch.key,
            'User-Agent': USER_AGENT,
        };
        const started = this.clock();
        for (let attempt = 0;; attempt++) {
            const answer = await transport.post(compressed, headers);
            const decision = decide(answer, batch.traceIds.length, attempt, this.jitter());
            switch (decision.action) {
                case 'delivered':
                    this.settleDelivered(batch, answer);
                    return [];
                case 'final':
                    ledger.reject(decision.reason, decision.detail, batch.traceIds);
                    this.forget(batch);
                    return [];
                case 'split':
                    return this.split(batch);
                case 'retry':
                    if (this.clock() + decision.delaySeconds - started > this.maxRetrySeconds) {
                        ledger.drop('retries_exhausted', `still ${decision.reason} after ${this.maxRetrySeconds} s`, batch.traceIds);
                        this.forget(batch);
                        return [];
                    }
                    ledger.retry(decision.reason);
                    if (!(await sleep(decision.delaySeconds)))
                        return undefined;
            }
        }
    }
    settleDelivered(batch, answer) {
        const rejected = rejectedTraces(answer.body, batch.traceIds.length);
        for (const { index, code, detail } of rejected)
            this.options.ledger.reject(code, detail, [batch.traceIds[index]]);
        this.options.ledger.sent += batch.traceIds.length - rejected.length;
        this.forget(batch);
    }
    split(batch) {
        const traces = batch.traces();
        const middle = Math.ceil(traces.length / 2);
        const halves = [Batch.of(traces.slice(0, middle)), Batch.of(traces.slice(middle))];
        // The halves are on disk before the whole goes: a kill in between resends traces the service
        // refused as a whole, never loses them.
        for (const half of halves)
            this.options.spool?.write(half);
        this.forget(batch);
        return halves;
    }
    forget(batch) {
        this.options.spool?.delete(batch.key);
    }
}
