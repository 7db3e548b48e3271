/** The counters behind {@link DeliveryReport}. */
export class Ledger {
    onUndelivered;
    handed = 0;
    recovered = 0;
    sent = 0;
    rejected = new Map();
    dropped = new Map();
    retried = new Map();
    constructor(onUndelivered) {
        this.onUndelivered = onUndelivered;
    }
    reject(reason, detail, traceIds) {
        this.rejected.set(reason, (this.rejected.get(reason) ?? 0) + traceIds.length);
        this.tell({ outcome: 'rejected', reason, detail, traceIds });
    }
    drop(reason, detail, traceIds) {
        this.dropped.set(reason, (this.dropped.get(reason) ?? 0) + traceIds.length);
        this.tell({ outcome: 'dropped', reason, detail, traceIds });
    }
    retry(reason) {
        this.retried.set(reason, (this.retried.get(reason) ?? 0) + 1);
    }
    report() {
        const rejected = Object.fromEntries(this.rejected);
        const dropped = Object.fromEntries(this.dropped);
        const done = this.sent + sum(this.rejected) + sum(this.dropped);
        return { handed: this.handed, recovered: this.recovered, sent: this.sent, rejected, dropped, pending: this.handed + this.recovered - done, retried: Object.fromEntries(this.retried) };
    }
    tell(event) {
        try {
            this.onUndelivered?.(event);
        }
        catch (error) {
            console.error('[trace-ingest] onUndelivered callback threw', error);
        }
    }
}
function sum(counts) {
    let total = 0;
    for (const count of counts.values())
        total += count;
    return total;
}
