import { Log } from './log.js';

/**
 * What happened to every trace handed over since the client started:
 * `handed + recovered === sent + Σ rejected + Σ dropped + pending` always holds.
 */
export interface DeliveryReport {
  handed: number;
  /** Traces of batches found in the spool at start, left by a process that died. */
  recovered: number;
  sent: number;
  /** Refused by the service, by its reason (a per-trace issue code, or the answer's `code`). */
  rejected: Record<string, number>;
  /** Given up by the SDK, by our reason (`queue_full`, `trace_too_large`, `retries_exhausted`, …). */
  dropped: Record<string, number>;
  pending: number;
  /** Resends, by the reason of the answer that asked for one (`rate_limited`, `reset`, …); outside the sum above. */
  retried: Record<string, number>;
  /** Spool files found unreadable at start and renamed to `<name>.unreadable`; outside the sum above. */
  unreadableSpoolFiles: number;
  /** Spool files whose last record was cut short (a kill mid-write) or failed its checksum; outside the sum above. */
  tornSpoolRecords: number;
}

/** Traces that will not be stored, with the reason: passed to the `onUndelivered` callback. */
export interface Undelivered {
  outcome: 'rejected' | 'dropped';
  reason: string;
  detail: string;
  traceIds: readonly string[];
}

/** The counters behind {@link DeliveryReport}. */
export class Ledger {
  handed = 0;
  recovered = 0;
  sent = 0;
  unreadableSpoolFiles = 0;
  tornSpoolRecords = 0;
  /** The last answer that left traces unsent (the URL and the status, or why it could not be reached); cleared by a delivery. */
  lastFailure: string | undefined;
  private readonly rejected = new Map<string, number>();
  private readonly dropped = new Map<string, number>();
  private readonly retried = new Map<string, number>();

  constructor(
    private readonly onUndelivered?: (event: Undelivered) => void,
    private readonly log: Log = new Log(),
  ) {}

  reject(reason: string, detail: string, traceIds: readonly string[]): void {
    this.rejected.set(reason, (this.rejected.get(reason) ?? 0) + traceIds.length);
    this.log.warn(`rejected:${reason}`, `the service rejected ${traces(traceIds.length)}: ${reason}${detail ? ` (${detail})` : ''}`);
    this.tell({ outcome: 'rejected', reason, detail, traceIds });
  }

  drop(reason: string, detail: string, traceIds: readonly string[]): void {
    this.dropped.set(reason, (this.dropped.get(reason) ?? 0) + traceIds.length);
    this.log.warn(`dropped:${reason}`, `dropped ${traces(traceIds.length)}: ${reason}${detail ? ` (${detail})` : ''}`);
    this.tell({ outcome: 'dropped', reason, detail, traceIds });
  }

  retry(reason: string): void {
    this.retried.set(reason, (this.retried.get(reason) ?? 0) + 1);
  }

  report(): DeliveryReport {
    const rejected = Object.fromEntries(this.rejected);
    const dropped = Object.fromEntries(this.dropped);
    const done = this.sent + sum(this.rejected) + sum(this.dropped);
    return {
      handed: this.handed,
      recovered: this.recovered,
      sent: this.sent,
      rejected,
      dropped,
      pending: this.handed + this.recovered - done,
      retried: Object.fromEntries(this.retried),
      unreadableSpoolFiles: this.unreadableSpoolFiles,
      tornSpoolRecords: this.tornSpoolRecords,
    };
  }

  private tell(event: Undelivered): void {
    try {
      this.onUndelivered?.(event);
    } catch (error) {
      this.log.warn('onUndelivered', `the onUndelivered callback threw: ${String(error)}`);
    }
  }
}

function traces(count: number): string {
  return count === 1 ? '1 trace' : `${count} traces`;
}

function sum(counts: Map<string, number>): number {
  let total = 0;
  for (const count of counts.values()) total += count;
  return total;
}
