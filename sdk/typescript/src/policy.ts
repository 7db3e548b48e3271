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

/** A JSON object: not null, not an array (the Python SDK's `dict`). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The decision for `answer` to a batch of `batchSize` traces on its `attempt`-th retry (0 first), with `jitter` in [0, 1),
 * at `now` (ms since the epoch, for a Retry-After date).
 */
export function decide(answer: Answer, batchSize: number, attempt: number, jitter: number, now: number = Date.now()): Decision {
  const body = isRecord(answer.body) ? answer.body : {};
  // An empty code names nothing: the answer is known by its status (as in the Python SDK: decisions.json).
  const code = typeof body.code === 'string' && body.code !== '' ? body.code : undefined;
  const detail = typeof body.detail === 'string' ? body.detail : '';
  const { status } = answer;
  if (status === null) return { action: 'retry', delaySeconds: backoff(attempt, jitter), reason: answer.failure ?? 'network_error', detail };
  if (status >= 200 && status < 300) return { action: 'delivered', delaySeconds: 0, reason: '', detail };
  const reason = code ?? `http_${status}`;
  if (status === 413 || (status === 429 && code === 'batch_exceeds_quota')) {
    return { action: batchSize > 1 ? 'split' : 'final', delaySeconds: 0, reason, detail };
  }
  if (status === 408 || status === 409 || status === 429 || status >= 500) {
    // Never shorter than the backoff: a `Retry-After: 0` answered again and again must not make a tight loop.
    const retryAfter = parseRetryAfter(answer.headers['retry-after'], now);
    const delaySeconds = Math.max(backoff(attempt, jitter), retryAfter === undefined ? 0 : retryAfter * (1 + RETRY_AFTER_JITTER * jitter));
    return { action: 'retry', delaySeconds, reason, detail };
  }
  return { action: 'final', delaySeconds: 0, reason, detail };
}

/** Full jitter: uniform in [0, min(cap, base × 2^attempt)). */
function backoff(attempt: number, jitter: number): number {
  return jitter * Math.min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2 ** Math.min(attempt, 30));
}

const DAY_NAMES = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const LONG_DAY_NAMES = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const TIME = '(\\d\\d):(\\d\\d):(\\d\\d)';
const MONTH = `(${MONTHS.join('|')})`;
/** The three HTTP-date forms of RFC 9110 §5.6.7: IMF-fixdate, the obsolete RFC 850 form and asctime. */
const IMF_FIXDATE = new RegExp(`^(${DAY_NAMES.join('|')}), (\\d\\d) ${MONTH} (\\d{4}) ${TIME} GMT$`);
const RFC850_DATE = new RegExp(`^(${LONG_DAY_NAMES.join('|')}), (\\d\\d)-${MONTH}-(\\d\\d) ${TIME} GMT$`);
const ASCTIME_DATE = new RegExp(`^(${DAY_NAMES.join('|')}) ${MONTH} (\\d\\d| \\d) ${TIME} (\\d{4})$`);

/**
 * Seconds to wait from a Retry-After header at `now` (ms since the epoch), per RFC 9110 §10.2.3: delta-seconds
 * (ASCII digits only) or an HTTP-date in the future. Undefined for anything else (a fraction, a sign, junk, a date
 * not after `now`): the caller falls back to its backoff. `Date.parse` is not used: it reads "1.5" or "-1" as dates.
 */
export function parseRetryAfter(value: string | undefined, now: number = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.replace(/^[ \t]+|[ \t]+$/g, '');
  if (/^[0-9]+$/.test(trimmed)) return Number(trimmed);
  const when = parseHttpDate(trimmed, now);
  return when === undefined || when <= now ? undefined : (when - now) / 1000;
}

/** An HTTP-date (RFC 9110 §5.6.7) in ms since the epoch, or undefined. */
function parseHttpDate(text: string, now: number): number | undefined {
  const fields = httpDateFields(text, now);
  if (!fields) return undefined;
  const [year, month, day, hour, minute, second] = fields;
  if (hour > 23 || minute > 59 || second > 60) return undefined;
  const when = Date.UTC(year, month, day, hour, minute, Math.min(second, 59));
  return new Date(when).getUTCDate() === day ? when : undefined;
}

/** Year, month index, day, hour, minute, second of any of the three forms. */
function httpDateFields(text: string, now: number): [number, number, number, number, number, number] | undefined {
  const imf = IMF_FIXDATE.exec(text);
  if (imf) return [Number(imf[4]), MONTHS.indexOf(imf[3] as string), Number(imf[2]), Number(imf[5]), Number(imf[6]), Number(imf[7])];
  const rfc850 = RFC850_DATE.exec(text);
  if (rfc850) {
    // A two-digit year more than 50 years ahead is the most recent past year with those digits (§5.6.7).
    const thisYear = new Date(now).getUTCFullYear();
    let year = Math.floor(thisYear / 100) * 100 + Number(rfc850[4]);
    if (year > thisYear + 50) year -= 100;
    return [year, MONTHS.indexOf(rfc850[3] as string), Number(rfc850[2]), Number(rfc850[5]), Number(rfc850[6]), Number(rfc850[7])];
  }
  const asctime = ASCTIME_DATE.exec(text);
  if (asctime) return [Number(asctime[7]), MONTHS.indexOf(asctime[2] as string), Number(asctime[3]), Number(asctime[4]), Number(asctime[5]), Number(asctime[6])];
  return undefined;
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
