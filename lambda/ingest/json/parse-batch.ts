import { exceedsContainerLimit, MAX_JSON_CONTAINERS } from '../../shared/domain/json-limits.js';
import { MalformedBodyError } from '../core/errors.js';

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
    throw new MalformedBodyError(`Malformed body: not valid JSON (${(error as Error).message})`, { cause: error });
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
