import { MalformedBodyError } from '../errors.js';

export const MAX_TRACES_PER_BATCH = 500;

/**
 * Arrays and objects a body may hold outside strings. JSON.parse needs ~50–150 bytes of heap per
 * container, so 20 MiB of `[[[[…` or `{},{},…` (20 kB gzipped) would take 0.5–1 GB and seconds of
 * CPU; a million keeps the worst case near 100 MB while a real batch holds a few thousand.
 */
export const MAX_JSON_CONTAINERS = 1_000_000;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const OPEN_BRACE = 0x7b;

/** Counts `[` and `{` anywhere in the text, stopping past `limit`: an upper bound of the containers. */
function bracketUpperBound(text: string, limit: number): number {
  let count = 0;
  for (const bracket of ['[', '{']) {
    for (let i = text.indexOf(bracket); i !== -1 && count <= limit; i = text.indexOf(bracket, i + 1)) count++;
  }
  return count;
}

/** Counts the arrays and objects opened outside strings, stopping past `limit`. */
function containersOutsideStrings(text: string, limit: number): number {
  let count = 0;
  for (let i = 0; i < text.length && count <= limit; i++) {
    const c = text.charCodeAt(i);
    if (c === OPEN_BRACKET || c === OPEN_BRACE) {
      count++;
    } else if (c === QUOTE) {
      // Jump to the closing quote: one preceded by an even number of backslashes.
      for (;;) {
        const end = text.indexOf('"', i + 1);
        if (end === -1) return count; // unterminated: JSON.parse reports it
        let backslashes = 0;
        while (text.charCodeAt(end - 1 - backslashes) === BACKSLASH) backslashes++;
        i = end;
        if (backslashes % 2 === 0) break;
      }
    }
  }
  return count;
}

/**
 * True when the text holds more than `limit` arrays and objects. Free for bodies shorter than the
 * limit (each container takes a character) and cheap for real batches, whose brackets are few;
 * only a text with more brackets than the limit is scanned exactly.
 */
export function exceedsContainerLimit(text: string, limit: number = MAX_JSON_CONTAINERS): boolean {
  if (text.length <= limit) return false;
  if (bracketUpperBound(text, limit) <= limit) return false;
  return containersOutsideStrings(text, limit) > limit;
}

/**
 * Parses the body text into the batch envelope (docs/contract.md §1, check 5): a JSON object whose `traces` is an
 * array of 1 to 500 items. The items themselves are validated one by one later.
 */
export function parseBatch(text: string): unknown[] {
  if (exceedsContainerLimit(text)) {
    throw new MalformedBodyError(
      `Malformed body: more than ${MAX_JSON_CONTAINERS} JSON arrays and objects; a batch needs far fewer, split it or remove unknown members`,
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
