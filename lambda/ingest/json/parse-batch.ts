import { jsonSyntaxReason } from '../../shared/domain/describe-value.js';
import { exceedsContainerLimit, MAX_JSON_CONTAINERS } from '../../shared/domain/json-limits.js';
import type { TraceDraft } from '../core/draft.js';
import { MalformedBodyError } from '../core/errors.js';
import { mayHoldLoneSurrogates } from '../core/validation/well-formed.js';

export const MAX_TRACES_PER_BATCH = 500;

/**
 * Parses the body text into the batch envelope (docs/contract.md §1, check 5): a JSON object whose `traces` is an
 * array of 1 to 500 items. The items themselves are validated one by one later.
 */
export function parseBatch(text: string): unknown[] {
  if (exceedsContainerLimit(text)) {
    throw new MalformedBodyError(
      `Malformed body: more than ${MAX_JSON_CONTAINERS} JSON arrays and objects (every [ and { counts, also inside strings, whose JSON text is parsed too); a batch needs far fewer, split it or remove unknown members`,
    );
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw new MalformedBodyError(`Malformed body: not valid JSON (${jsonSyntaxReason(error)})`, { cause: error });
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new MalformedBodyError('Malformed body: the body must be a JSON object with a "traces" array');
  }
  const traces = (body as { traces?: unknown }).traces;
  if (traces === undefined || traces === null) {
    throw new MalformedBodyError('Malformed body: "traces" is missing; send {"traces": [...]} with 1 to 500 traces');
  }
  if (!Array.isArray(traces)) {
    throw new MalformedBodyError('Malformed body: "traces" must be an array of 1 to 500 traces');
  }
  if (traces.length === 0) {
    throw new MalformedBodyError('Malformed body: "traces" is empty; send 1 to 500 traces');
  }
  if (traces.length > MAX_TRACES_PER_BATCH) {
    throw new MalformedBodyError(
      `Malformed body: "traces" has ${traces.length} items, more than the limit of ${MAX_TRACES_PER_BATCH}; split the batch`,
    );
  }
  return traces;
}

/**
 * The JSON route's decoding step: the body's traces as drafts, each as the client sent it, one invalid span
 * rejecting its trace (docs/contract.md §3). `strictUtf8`: the text was decoded from bytes as strict UTF-8 (a base64
 * or compressed body), not handed over as the gateway's string.
 */
export function draftBatch(text: string, strictUtf8: boolean): TraceDraft[] {
  const wellFormedText = (strictUtf8 || text.isWellFormed()) && !mayHoldLoneSurrogates(text);
  return parseBatch(text).map((trace) => ({ trace, spansOnly: false, invalidSpan: 'rejects-trace', wellFormedText }));
}
