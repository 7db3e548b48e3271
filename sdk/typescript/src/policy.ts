/**
 * What to do with one answer of the service: a pure function, shared with the Python SDK through
 * sdk/conformance/delivery.json.
 */

export const BACKOFF_BASE_SECONDS = 0.5;
export const BACKOFF_CAP_SECONDS = 30;
/** A Retry-After is honoured, plus up to 10 % so that clients refused together do not return together. */
export const RETRY_AFTER_JITTER = 0.1;

/** One answer: a status with headers (lower-case names) and the parsed JSON body, or a network failure. */
export interface Answer {
  status: number | null;
  headers: Record<string, string>;
  body: unknown;
  failure?: 'reset' | 'timeout';
}

export interface Decision {
  action: 'delivered' | 'retry' | 'split' | 'final';
  delaySeconds: number;
  reason: string;
  detail: string;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The decision for `answer` to a batch of `batchSize` traces on its `attempt`-th retry (0 first), with `jitter` in [0, 1). */
export function decide(answer: Answer, batchSize: number, attempt: number, jitter: number): Decision {
  const body = isRecord(answer.body) ? answer.body : {};
  const code = typeof body.code === 'string' ? body.code : undefined;
  const detail = typeof body.detail === 'string' ? body.detail : '';
  const { status } = answer;
  if (status === null) return { action: 'retry', delaySeconds: backoff(attempt, jitter), reason: answer.failure ?? 'network_error', detail };
  if (status >= 200 && status < 300) return { action: 'delivered', delaySeconds: 0, reason: '', detail };
  const reason = code ?? `http_${status}`;
  if (status === 413 || (status === 429 && code === 'batch_exceeds_quota')) {
    return { action: batchSize > 1 ? 'split' : 'final', delaySeconds: 0, reason, detail };
  }
  if (status === 408 || status === 409 || status === 429 || status >= 500) {
    const retryAfter = parseRetryAfter(answer.headers['retry-after']);
    const delaySeconds = retryAfter === undefined ? backoff(attempt, jitter) : retryAfter * (1 + RETRY_AFTER_JITTER * jitter);
    return { action: 'retry', delaySeconds, reason, detail };
  }
  return { action: 'final', delaySeconds: 0, reason, detail };
}

/** Full jitter: uniform in [0, min(cap, base × 2^attempt)). */
function backoff(attempt: number, jitter: number): number {
  return jitter * Math.min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2 ** Math.min(attempt, 30));
}

/** Seconds from a Retry-After header: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const when = Date.parse(trimmed);
  return Number.isNaN(when) ? undefined : Math.max(0, (when - Date.now()) / 1000);
}

/** The per-trace errors of a 200: index, the first issue's code and a description, for each. */
export function rejectedTraces(body: unknown, batchSize: number): { index: number; code: string; detail: string }[] {
  const errors = isRecord(body) ? body.errors : undefined;
  if (!Array.isArray(errors)) return [];
  const found: { index: number; code: string; detail: string }[] = [];
  for (const item of errors) {
    if (!isRecord(item) || typeof item.index !== 'number' || !Number.isInteger(item.index)) continue;
    if (item.index < 0 || item.index >= batchSize) continue;
    const first = Array.isArray(item.issues) && isRecord(item.issues[0]) ? item.issues[0] : {};
    const code = typeof first.code === 'string' ? first.code : 'invalid_trace';
    const detail = `${typeof first.path === 'string' ? first.path : ''} ${typeof first.message === 'string' ? first.message : ''}`.trim();
    found.push({ index: item.index, code, detail });
  }
  return found;
}
