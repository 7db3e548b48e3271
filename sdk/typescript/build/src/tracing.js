import { AsyncLocalStorage } from 'node:async_hooks';
const context = new AsyncLocalStorage();
/** The trace open in this async context, if any. */
export function currentTrace() {
    return context.getStore()?.trace;
}
/** The innermost span open in this async context, if any. */
export function currentSpan() {
    return context.getStore()?.span;
}
/** Now in ISO 8601 UTC with microseconds, as the service stores timestamps. */
function isoNow() {
    const micros = Math.round((performance.timeOrigin + performance.now()) * 1000);
    const iso = new Date(Math.floor(micros / 1000)).toISOString();
    return `${iso.slice(0, -1)}${String(micros % 1000).padStart(3, '0')}Z`;
}
function errorText(error) {
    if (error instanceof Error)
        return error.message ? `${error.name}: ${error.message}` : error.name;
    return String(error);
}
function isPromiseLike(value) {
    return typeof value?.then === 'function';
}
/**
 * Runs `fn` with `item` open, ends it when `fn` returns or its promise settles, and gives back
 * exactly what `fn` gave: its value, or its error, rethrown untouched.
 */
function runOpen(item, store, fn) {
    let result;
    try {
        result = context.run(store, fn);
    }
    catch (error) {
        item.end(error);
        throw error;
    }
    if (!isPromiseLike(result)) {
        item.end();
        return result;
    }
    return Promise.resolve(result).then(async (value) => {
        await item.end();
        return value;
    }, async (error) => {
        await item.end(error);
        throw error;
    });
}
class Timed {
    timestamp = isoNow();
    durationMs;
    started = performance.now();
    elapsedMs() {
        return Math.round((performance.now() - this.started) * 1000) / 1000;
    }
}
/** One step of a trace. Set its fields directly (`span.output = …`) or with {@link Span.update}. */
export class Span extends Timed {
    trace;
    name;
    spanId = crypto.randomUUID();
    parentSpanId;
    kind;
    input;
    output;
    model;
    inputTokens;
    outputTokens;
    totalTokens;
    attributes;
    status;
    errorMessage;
    conversationId;
    userId;
    agentId;
    agentName;
    constructor(trace, name, options = {}) {
        super();
        this.trace = trace;
        this.name = name;
        const parent = options.parent === undefined ? defaultParent(trace) : options.parent;
        this.parentSpanId = parent?.spanId ?? null;
        this.kind = options.kind ?? 'llm';
        this.input = options.input;
        this.output = options.output;
        this.model = options.model ?? '';
        this.inputTokens = options.inputTokens;
        this.outputTokens = options.outputTokens;
        this.totalTokens = options.totalTokens;
        this.attributes = withTags(options.attributes, options.tags);
        this.status = options.status ?? 'ok';
        this.errorMessage = options.errorMessage ?? null;
        this.conversationId = options.conversationId ?? trace.conversationId;
        this.userId = options.userId ?? trace.userId;
        this.agentId = options.agentId ?? trace.agentId;
        this.agentName = options.agentName ?? trace.agentName;
        trace.spans.push(this);
    }
    /** Sets several fields at once; `tags` goes into `attributes.tags`. */
    update(fields) {
        const { tags, ...rest } = fields;
        Object.assign(this, rest);
        if (tags)
            this.attributes = withTags(this.attributes, tags);
        return this;
    }
    /** Ends the span; an error marks it `error` with `error_message`. The callback forms do this. */
    end(error) {
        if (this.durationMs !== undefined)
            return undefined;
        if (error !== undefined) {
            this.status = 'error';
            this.errorMessage = errorText(error);
        }
        this.durationMs = this.elapsedMs();
        return undefined;
    }
    [Symbol.dispose]() {
        this.end();
    }
    /** The span as the service reads it. */
    toWire(mask) {
        return {
            span_id: this.spanId,
            parent_span_id: this.parentSpanId,
            timestamp: this.timestamp,
            duration_ms: this.durationMs ?? this.elapsedMs(),
            name: this.name,
            kind: this.kind,
            status: this.status,
            model: this.model,
            input_tokens: this.inputTokens ?? 0,
            output_tokens: this.outputTokens ?? 0,
            total_tokens: this.totalTokens ?? (this.inputTokens ?? 0) + (this.outputTokens ?? 0),
            input: jsonText(masked(mask, 'input', this.input), ''),
            output: jsonText(masked(mask, 'output', this.output), ''),
            attributes: jsonText(masked(mask, 'attributes', this.attributes), '{}'),
            error_message: this.errorMessage,
            session_id: this.conversationId,
            agent_id: this.agentId,
            agent_name: this.agentName,
            user_id: this.userId,
        };
    }
}
/** One run of an agent or model, holding its spans in the order they started; sent when it ends. */
export class Trace extends Timed {
    sink;
    name;
    traceId;
    spans = [];
    environment;
    workspaceSlug;
    model;
    inputTokens;
    outputTokens;
    totalTokens;
    attributes;
    status;
    conversationId;
    userId;
    agentId;
    agentName;
    ended = false;
    constructor(sink, name, options = {}) {
        super();
        this.sink = sink;
        this.name = name;
        this.traceId = options.traceId ?? crypto.randomUUID();
        this.environment = options.environment ?? sink.environment;
        this.workspaceSlug = options.workspaceSlug ?? sink.workspaceSlug;
        this.model = options.model ?? '';
        this.inputTokens = options.inputTokens;
        this.outputTokens = options.outputTokens;
        this.totalTokens = options.totalTokens;
        this.attributes = withTags(options.attributes, options.tags);
        this.status = options.status ?? 'ok';
        this.conversationId = options.conversationId ?? '';
        this.userId = options.userId ?? '';
        this.agentId = options.agentId ?? '';
        this.agentName = options.agentName ?? '';
    }
    span(name, optionsOrFn, maybeFn) {
        const [options, fn] = typeof optionsOrFn === 'function' ? [{}, optionsOrFn] : [optionsOrFn, maybeFn];
        const span = new Span(this, name, options);
        return runOpen(span, { trace: this, span }, () => fn(span));
    }
    /** A span to end yourself, or with `using` (which cannot see an error: call `end(error)` for that). */
    startSpan(name, options = {}) {
        return new Span(this, name, options);
    }
    /** Sets several fields at once; `tags` goes into `attributes.tags`. */
    update(fields) {
        const { tags, ...rest } = fields;
        Object.assign(this, rest);
        if (tags)
            this.attributes = withTags(this.attributes, tags);
        return this;
    }
    /**
     * Ends the trace and hands it over for delivery. Resolves when it is queued (at once, unless
     * the queue is full and the client was told to block).
     */
    end(error) {
        if (this.ended)
            return undefined;
        this.ended = true;
        if (error !== undefined)
            this.status = 'error';
        this.durationMs = this.elapsedMs();
        return this.sink.submit(this);
    }
    [Symbol.dispose]() {
        void this.end();
    }
    /** Runs `fn` with this trace as the current one (the client's `trace()` does this). */
    run(fn) {
        return runOpen(this, { trace: this, span: undefined }, () => fn(this));
    }
    /** The trace as the service reads it. */
    toWire(mask) {
        const spans = this.spans.map((span) => span.toWire(mask));
        const total = (field) => spans.reduce((sum, span) => sum + span[field], 0);
        const inputTokens = this.inputTokens ?? total('input_tokens');
        const outputTokens = this.outputTokens ?? total('output_tokens');
        const ownCounts = this.inputTokens !== undefined || this.outputTokens !== undefined;
        return {
            trace_id: this.traceId,
            timestamp: this.timestamp,
            environment: this.environment,
            workspace_slug: this.workspaceSlug,
            duration_ms: this.durationMs ?? this.elapsedMs(),
            root_span_name: this.name,
            status: this.status,
            model: this.model,
            input_tokens: inputTokens,
            output_tokens: outputTokens,
            total_tokens: this.totalTokens ?? (ownCounts ? inputTokens + outputTokens : total('total_tokens')),
            attributes: jsonText(masked(mask, 'attributes', this.attributes), '{}'),
            session_id: this.conversationId,
            agent_id: this.agentId,
            agent_name: this.agentName,
            user_id: this.userId,
            spans,
        };
    }
}
function defaultParent(trace) {
    const store = context.getStore();
    return store?.trace === trace ? store.span : undefined;
}
function withTags(attributes, tags) {
    return tags === undefined ? { ...attributes } : { ...attributes, tags: [...tags] };
}
function masked(mask, field, value) {
    return mask ? mask(field, value) : value;
}
/** The wire rule: input, output and attributes travel as JSON text; undefined and null are the field's empty value. */
function jsonText(value, empty) {
    if (value === undefined || value === null)
        return empty;
    const text = JSON.stringify(value, (_key, item) => (typeof item === 'bigint' ? item.toString() : item));
    return text ?? empty;
}
