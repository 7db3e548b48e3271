import { BACKSLASH, CLOSE_BRACE, CLOSE_BRACKET, OPEN_BRACE, OPEN_BRACKET, QUOTE } from './json-chars.js';

/**
 * Bounds on what `JSON.parse` is asked to build, checked on the text before it is parsed. `JSON.parse`
 * needs ~50–150 bytes of heap per array or object and is iterative, so nesting alone never overflows the
 * stack: memory is what a hostile text spends. Brackets inside strings count, because the strings of
 * `input`, `output` and `attributes` hold JSON text that validation (and the landing, for `tags`) parse too.
 */

/**
 * `[` and `{` one request body may hold, inside strings or not. 20 kB of gzip can inflate to 20 MB of
 * `[[[[…`, which would take ~1 GB; a million keeps each parse near 100–150 MB while a real batch holds a
 * few thousand.
 */
export const MAX_JSON_CONTAINERS = 1_000_000;

/**
 * Nesting of the JSON text held in `input`, `output` and `attributes`: as deep as serde_json's default
 * recursion limit, far deeper than any message list or tool schema, and shallow enough that readers which
 * recurse (a query engine's JSON functions) do not fail on what we stored.
 */
export const MAX_JSON_TEXT_DEPTH = 128;

type Haystack = string | Uint8Array;

/**
 * `[` and `{` as JSON text can spell them: themselves, or escaped inside a string (`\u005b`, `\u007B`…), which the
 * first parse turns into a bracket of the JSON text that string holds, parsed in its turn.
 */
const BRACKETS = ['[', '{'];
/** What every escaped bracket starts with; the two hex digits after it say whether it is one (`5b`, `7B`…). */
const ESCAPE_PREFIX = '\\u00';

/**
 * `[` and `{` in the text (or the bytes, whose UTF-8 has them as single bytes), escaped or not, counted up to
 * `limit + 1`: an upper bound of the arrays and objects that parsing the text and the JSON text its strings
 * hold can build. Three `indexOf` passes: the brackets, then the rare `\u00` escapes, each checked for a bracket.
 */
export function bracketsUpTo(haystack: Haystack, limit: number): number {
  const text = typeof haystack === 'string' ? haystack : Buffer.from(haystack.buffer, haystack.byteOffset, haystack.byteLength);
  const codeAt = typeof text === 'string' ? (i: number) => text.charCodeAt(i) : (i: number) => text[i] ?? 0;
  let count = 0;
  for (const bracket of BRACKETS) {
    for (let i = text.indexOf(bracket); i !== -1 && count <= limit; i = text.indexOf(bracket, i + 1)) count++;
  }
  for (let i = text.indexOf(ESCAPE_PREFIX); i !== -1 && count <= limit; i = text.indexOf(ESCAPE_PREFIX, i + 1)) {
    if (isEscapedBracket(codeAt(i + 4), codeAt(i + 5))) count++;
  }
  return count;
}

/** `5b`, `5B`, `7b` or `7B`: the hex digits of `[` and `{`. */
function isEscapedBracket(high: number, low: number): boolean {
  return (high === 0x35 || high === 0x37) && (low === 0x62 || low === 0x42);
}

/**
 * True when the body holds more than `limit` `[` and `{` (escaped ones included): an upper bound of the arrays
 * and objects that parsing it and the JSON text in its strings can build. Free for a body shorter than the limit
 * and a few `indexOf` passes above it.
 */
export function exceedsContainerLimit(body: Haystack, limit: number = MAX_JSON_CONTAINERS): boolean {
  return body.length > limit && bracketsUpTo(body, limit) > limit;
}

/**
 * True when JSON text nests arrays and objects deeper than `limit` (brackets inside its strings do not
 * count). Free for text with no more brackets than the limit; otherwise one scan that stops at the first
 * level too deep, so a 10-million-deep `[[[…` costs microseconds and no memory.
 */
export function exceedsDepthLimit(text: string, limit: number = MAX_JSON_TEXT_DEPTH): boolean {
  if (text.length <= limit || bracketsUpTo(text, limit) <= limit) return false;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === OPEN_BRACKET || c === OPEN_BRACE) {
      if (++depth > limit) return true;
    } else if (c === CLOSE_BRACKET || c === CLOSE_BRACE) {
      depth--;
    } else if (c === QUOTE) {
      // Jump to the closing quote: one preceded by an even number of backslashes.
      for (;;) {
        const end = text.indexOf('"', i + 1);
        if (end === -1) return false; // unterminated: JSON.parse reports it
        let backslashes = 0;
        while (text.charCodeAt(end - 1 - backslashes) === BACKSLASH) backslashes++;
        i = end;
        if (backslashes % 2 === 0) break;
      }
    }
  }
  return false;
}
