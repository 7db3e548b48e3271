import { AsyncLocalStorage } from 'node:async_hooks';
import { toJsonText } from './json-value.js';

export type SpanKind = 'llm' | 'tool' | 'chain' | 'retriever' | 'agent' | 'custom';
export type Status = 'ok' | 'error' | 'timeout';
/** Rewrites `input`, `output` or `attributes` (named by the first argument) before the trace is queued. */
export type Mask = (field: 'input' | 'output' | 'attributes', value: unknown) => unknown;

/** Who a trace reports to when it ends: the client. */
export interface TraceSink {
  readonly environment: string;
  readonly workspaceSlug: string;
  /** A trace started: the client keeps it until it ends, to end it if the process exits first. */
  opened?(trace: Trace): void;
  submit(trace: Trace): Promise<void> | undefined;
}

interface Who {
  /** The conversation; sent as `session_id`. */
  conversationId?: string;
  userId?: string;
  agentId?: string;
  agentName?: string;
}

interface Measured {
  model?: string;
  inputTokens?: number;
  outputTokens?: number;
  /** Defaults to input + output tokens. */
  totalTokens?: number;
  /** Any JSON object; sent as JSON text. */
  attributes?: Record<string, unknown>;
  /** Stored as `attributes.tags`. */
  tags?: string[];
  status?: Status;
}

export interface SpanOptions extends Who, Measured {
  kind?: SpanKind;
  /** Any JSON value; sent as JSON text. */
  input?: unknown;
  /** Any JSON value; sent as JSON text. */
  output?: unknown;
  errorMessage?: string | null;
  /** The parent span; by default the innermost open span of the same trace in this async context. */
  parent?: Span | null;
}

export interface TraceOptions extends Who, Measured {
  environment?: string;
  workspaceSlug?: string;
  traceId?: string;
}

interface Context {
  trace: Trace;
  span: Span | undefined;
}

/**
 * One context per process, shared by the ESM and the CommonJS build of this package when a program loads both
 * (the dual-package hazard): a trace opened through one is current for the other.
 */
const CONTEXT = Symbol.for('@trace-ingest/sdk.context');
const context = ((globalThis as Record<symbol, unknown>)[CONTEXT] ??= new AsyncLocalStorage<Context>()) as AsyncLocalStorage<Context>;

/** The trace open in this async context, if any. */
export function currentTrace(): Trace | undefined {
  return context.getStore()?.trace;
}

/** The innermost span open in this async context, if any. */
export function currentSpan(): Span | undefined {
  return context.getStore()?.span;
}

/** Now in ISO 8601 UTC with microseconds, as the service stores timestamps. */
function isoNow(): string {
  const micros = Math.round((performance.timeOrigin + performance.now()) * 1000);
  const iso = new Date(Math.floor(micros / 1000)).toISOString();
  return `${iso.slice(0, -1)}${String(micros % 1000).padStart(3, '0')}Z`;
}

export function errorText(error: unknown): string {
  if (error instanceof Error) return error.message ? `${error.name}: ${error.message}` : error.name;
  return String(error);
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/**
 * Runs `fn` with `item` open, ends it when `fn` returns or its promise settles, and gives back
 * exactly what `fn` gave: its value, or its error, rethrown untouched.
 */
function runOpen<R>(item: { end(error?: unknown): Promise<void> | undefined }, store: Context, fn: () => R): R {
  let result: R;
  try {
    result = context.run(store, fn);
  } catch (error) {
    item.end(error);
    throw error;
  }
  if (!isPromiseLike(result)) {
    item.end();
    return result;
  }
  return Promise.resolve(result).then(
    async (value) => {
      await item.end();
      return value;
    },
    async (error: unknown) => {
      await item.end(error);
      throw error;
    },
  ) as R;
}

abstract class Timed {
  readonly timestamp = isoNow();
  durationMs: number | undefined;
  private readonly started = performance.now();

  protected elapsedMs(): number {
    return Math.round((performance.now() - this.started) * 1000) / 1000;
  }
}

/** The fields a trace and its spans share: who ran it and what was measured, set directly or with `update`. */
abstract class Observed extends Timed {
  model: string;
  inputTokens: number | undefined;
  outputTokens: number | undefined;
  totalTokens: number | undefined;
  attributes: Record<string, unknown>;
  status: Status;
  conversationId: string;
  userId: string;
  agentId: string;
  agentName: string;

  /** `inherited` fills the who-fields that `options` leaves out (a span takes its trace's). */
  protected constructor(options: Who & Measured, inherited: Required<Who>) {
    super();
    this.model = options.model ?? '';
    this.inputTokens = options.inputTokens;
    this.outputTokens = options.outputTokens;
    this.totalTokens = options.totalTokens;
    this.attributes = withTags(options.attributes, options.tags);
    this.status = options.status ?? 'ok';
    this.conversationId = options.conversationId ?? inherited.conversationId;
    this.userId = options.userId ?? inherited.userId;
    this.agentId = options.agentId ?? inherited.agentId;
    this.agentName = options.agentName ?? inherited.agentName;
  }

  /** Sets several fields at once; `tags` goes into `attributes.tags`. */
  protected assign(fields: Who & Measured): this {
    const { tags, ...rest } = fields;
    Object.assign(this, rest);
    if (tags) this.attributes = withTags(this.attributes, tags);
    return this;
  }
}

const NOBODY: Required<Who> = { conversationId: '', userId: '', agentId: '', agentName: '' };

/** One step of a trace. Set its fields directly (`span.output = …`) or with {@link Span.update}. */
export class Span extends Observed implements Disposable {
  readonly spanId = crypto.randomUUID();
  readonly parentSpanId: string | null;
  kind: SpanKind;
  errorMessage: string | null;
  private taken: { input?: Taken; output?: Taken } = {};

  constructor(
    readonly trace: Trace,
    public name: string,
    options: SpanOptions = {},
  ) {
    super(options, trace);
    const parent = options.parent === undefined ? defaultParent(trace) : options.parent;
    this.parentSpanId = parent?.spanId ?? null;
    this.kind = options.kind ?? 'llm';
    this.input = options.input;
    this.output = options.output;
    this.errorMessage = options.errorMessage ?? null;
    trace.spans.push(this);
  }

  /**
   * Any JSON value, taken by value when set: what it holds then is what is sent, whatever later happens to the
   * object. Reading it gives a copy of what will be sent.
   */
  get input(): unknown {
    return this.taken.input?.value();
  }

  set input(value: unknown) {
    this.taken.input = Taken.of(value);
  }

  /** Any JSON value, taken by value when set, as `input` is. */
  get output(): unknown {
    return this.taken.output?.value();
  }

  set output(value: unknown) {
    this.taken.output = Taken.of(value);
  }

  /** Sets several fields at once; `tags` goes into `attributes.tags`. */
  update(fields: Omit<SpanOptions, 'parent'>): this {
    return this.assign(fields);
  }

  /** Ends the span; an error marks it `error` with `error_message`. The callback forms do this. */
  end(error?: unknown): undefined {
    if (this.durationMs !== undefined) return undefined;
    if (error !== undefined) {
      this.status = 'error';
      this.errorMessage = errorText(error);
    }
    this.durationMs = this.elapsedMs();
    return undefined;
  }

  [Symbol.dispose](): void {
    this.end();
  }

  /** The span as the service reads it. */
  toWire(mask: Mask | undefined): Record<string, unknown> {
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
      input: this.taken.input?.wire(mask, 'input') ?? '',
      output: this.taken.output?.wire(mask, 'output') ?? '',
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
export class Trace extends Observed implements Disposable {
  readonly traceId: string;
  readonly spans: Span[] = [];
  environment: string;
  workspaceSlug: string;
  private ended = false;

  constructor(
    private readonly sink: TraceSink,
    public name: string,
    options: TraceOptions = {},
  ) {
    super(options, NOBODY);
    this.traceId = options.traceId ?? crypto.randomUUID();
    this.environment = options.environment ?? sink.environment;
    this.workspaceSlug = options.workspaceSlug ?? sink.workspaceSlug;
    sink.opened?.(this);
  }

  /**
   * Runs `fn` inside a new span of this trace, ends the span when `fn` returns (or its promise
   * settles) and returns what `fn` returns. An error marks the span `error` and is rethrown untouched.
   */
  span<R>(name: string, fn: (span: Span) => R): R;
  span<R>(name: string, options: SpanOptions, fn: (span: Span) => R): R;
  span<R>(name: string, optionsOrFn: SpanOptions | ((span: Span) => R), maybeFn?: (span: Span) => R): R {
    const [options, fn] = typeof optionsOrFn === 'function' ? [{}, optionsOrFn] : [optionsOrFn, maybeFn as (span: Span) => R];
    const span = new Span(this, name, options);
    return runOpen(span, { trace: this, span }, () => fn(span));
  }

  /** A span to end yourself, or with `using` (which cannot see an error: call `end(error)` for that). */
  startSpan(name: string, options: SpanOptions = {}): Span {
    return new Span(this, name, options);
  }

  /** Sets several fields at once; `tags` goes into `attributes.tags`. */
  update(fields: Omit<TraceOptions, 'traceId'>): this {
    return this.assign(fields);
  }

  /**
   * Ends the trace and hands it over for delivery. Resolves when it is queued (at once, unless
   * the queue is full and the client was told to block).
   */
  end(error?: unknown): Promise<void> | undefined {
    if (this.ended) return undefined;
    this.ended = true;
    if (error !== undefined) this.status = 'error';
    this.durationMs = this.elapsedMs();
    return this.sink.submit(this);
  }

  [Symbol.dispose](): void {
    void this.end();
  }

  /** Ends every span still open, then the trace, each with `error`: the exit that cut them short. */
  abandon(error: unknown): void {
    for (const span of this.spans) span.end(error);
    void this.end(error);
  }

  /** Runs `fn` with this trace as the current one (the client's `trace()` does this). */
  run<R>(fn: (trace: Trace) => R): R {
    return runOpen(this, { trace: this, span: undefined }, () => fn(this));
  }

  /** The trace as the service reads it. */
  toWire(mask: Mask | undefined): Record<string, unknown> {
    const spans = this.spans.map((span) => span.toWire(mask));
    const total = (field: string) => spans.reduce((sum, span) => sum + (span[field] as number), 0);
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

function defaultParent(trace: Trace): Span | undefined {
  const store = context.getStore();
  return store?.trace === trace ? store.span : undefined;
}

function withTags(attributes: Record<string, unknown> | undefined, tags: string[] | undefined): Record<string, unknown> {
  return tags === undefined ? { ...attributes } : { ...attributes, tags: [...tags] };
}

function masked(mask: Mask | undefined, field: 'input' | 'output' | 'attributes', value: unknown): unknown {
  return mask ? mask(field, value) : value;
}

/** The wire rule: input, output and attributes travel as JSON text; undefined and null are the field's empty value. */
function jsonText(value: unknown, empty: string): string {
  if (value === undefined || value === null) return empty;
  return toJsonText(value) ?? empty;
}

/**
 * A span's `input` or `output` as it was when set: its JSON text then. A value that cannot be written (a cycle)
 * keeps its error, raised when the trace is serialised, which drops the trace as `not_serialisable`: setting a
 * field never throws into the caller.
 */
class Taken {
  private copy: { value: unknown } | undefined;

  private constructor(
    private readonly text: string | undefined,
    private readonly failure: { error: unknown } | undefined,
    private readonly original: unknown,
  ) {}

  static of(value: unknown): Taken | undefined {
    if (value === undefined) return undefined;
    if (value === null) return new Taken(undefined, undefined, null);
    try {
      return new Taken(toJsonText(value), undefined, undefined);
    } catch (error) {
      return new Taken(undefined, { error }, undefined);
    }
  }

  /** A copy of what will be sent (parsed once, when first read). */
  value(): unknown {
    if (this.failure) return undefined;
    if (this.text === undefined) return this.original;
    this.copy ??= { value: JSON.parse(this.text) as unknown };
    return this.copy.value;
  }

  /** The wire text; a mask sees a copy of the value as taken, and its answer is written anew. */
  wire(mask: Mask | undefined, field: 'input' | 'output'): string {
    if (this.failure) throw this.failure.error;
    if (!mask) return this.text ?? '';
    return jsonText(mask(field, this.text === undefined ? this.original : (JSON.parse(this.text) as unknown)), '');
  }
}
