/** Domain types of an accepted trace: the shape after validation, with every default applied. */

import type { AcceptedSpan, AcceptedTrace } from './generated/accepted-trace.js';

// The accepted shapes are generated from the trace JSON Schema (scripts/generate-normalizer.mjs), so a new field
// is declared once, there.
export type { AcceptedSpan, AcceptedTrace };
export type SpanKind = AcceptedSpan['kind'];
export type Status = AcceptedTrace['status'];

/** Server-side context published with every accepted trace. */
export interface TraceContext {
  org_id: string;
  /** The workspace the trace was accepted into (`""` for an org key and no slug). */
  workspace_slug: string;
  api_key_id: string;
  request_id: string;
  /** UTC, microsecond precision. */
  received_at: string;
  /**
   * The record's identity, `<request identity>/<index in the batch>`: the same for every copy of the
   * record (a resent PutRecords entry, a resend under the same Idempotency-Key), so copies collapse.
   * Absent on records written before it existed.
   */
  record_id?: string;
  /**
   * True when the record carries spans of a trace whose own row comes from another request (an
   * OTLP export without the trace's root span): its spans land, its `traces` row does not.
   */
  spans_only?: true;
}
