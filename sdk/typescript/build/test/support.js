import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
const CONFORMANCE = process.env.TRACE_INGEST_CONFORMANCE_DIR ?? new URL('../../../conformance/', import.meta.url).pathname;
export function conformance(name) {
    return JSON.parse(readFileSync(`${CONFORMANCE}/${name}`, 'utf8'));
}
/** A transport that records every request and answers from a script, then with `answer` (200 for all by default). */
export class Recorder {
    answers;
    answer;
    requests = [];
    constructor(answers = [], answer) {
        this.answers = answers;
        this.answer = answer;
    }
    async post(body, headers) {
        const decoded = JSON.parse(gunzipSync(body).toString('utf8'));
        const lower = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
        this.requests.push({ headers: lower, body: decoded, raw: body });
        const scripted = this.answers.shift();
        if (scripted)
            return scripted;
        if (this.answer)
            return this.answer(decoded.traces);
        return ok(decoded.traces.length);
    }
    get traceIds() {
        return this.requests.flatMap((request) => request.body.traces.map((trace) => trace.trace_id));
    }
}
export function ok(count, errors = []) {
    return { status: 200, headers: {}, body: { accepted: count - errors.length, rejected: errors.length, errors } };
}
