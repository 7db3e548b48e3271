import { BACKSLASH, CLOSE_BRACE, CLOSE_BRACKET, COLON, COMMA, OPEN_BRACE, OPEN_BRACKET, QUOTE } from './json-chars.js';
import { exceedsDepthLimit } from './json-limits.js';

/**
 * `too_deep` when the text nests arrays and objects deeper than `maxDepth` (outside its strings, whether or not it
 * is JSON: as {@link exceedsDepthLimit} says), else whether it holds JSON text (RFC 8259), decided exactly as
 * `JSON.parse` decides but building nothing. One scan for text that is JSON; a second, of the depth alone, only for
 * text that is not.
 *
 * Validation asks this of every `input` and `output` of a batch: most of a batch's bytes. `JSON.parse` would build
 * each message list only to drop it, and the garbage it leaves is most of the cost; this lets the regular expression
 * engine run through string contents, numbers and whitespace.
 */
export function jsonTextVerdict(text: string, maxDepth: number): 'json' | 'not_json' | 'too_deep' {
  const verdict = scanJsonText(text, maxDepth);
  if (verdict !== 'not_json') return verdict;
  return exceedsDepthLimit(text, maxDepth) ? 'too_deep' : 'not_json';
}

function scanJsonText(text: string, maxDepth: number): 'json' | 'not_json' | 'too_deep' {
  // The containers open around the current position: ARRAY or OBJECT.
  const open: number[] = [];
  let i = skipWhitespace(text, 0);
  value: for (;;) {
    const c = text.charCodeAt(i);
    if (c === OPEN_BRACE) {
      i = skipWhitespace(text, i + 1);
      if (open.length >= maxDepth) return 'too_deep';
      if (text.charCodeAt(i) === CLOSE_BRACE) i++;
      else {
        open.push(OBJECT);
        i = member(text, i);
        if (i < 0) return 'not_json';
        continue value;
      }
    } else if (c === OPEN_BRACKET) {
      i = skipWhitespace(text, i + 1);
      if (open.length >= maxDepth) return 'too_deep';
      if (text.charCodeAt(i) === CLOSE_BRACKET) i++;
      else {
        open.push(ARRAY);
        continue value;
      }
    } else if (c === QUOTE) {
      i = endOfString(text, i);
    } else if (c === LOWER_T) {
      i = text.startsWith('true', i) ? i + 4 : -1;
    } else if (c === LOWER_F) {
      i = text.startsWith('false', i) ? i + 5 : -1;
    } else if (c === LOWER_N) {
      i = text.startsWith('null', i) ? i + 4 : -1;
    } else {
      NUMBER.lastIndex = i;
      i = NUMBER.test(text) ? NUMBER.lastIndex : -1;
    }
    if (i < 0) return 'not_json';

    // After a value: a comma and the next one, the end of its container, or the end of the text.
    for (;;) {
      i = skipWhitespace(text, i);
      const container = open.at(-1);
      if (container === undefined) return i === text.length ? 'json' : 'not_json';
      const next = text.charCodeAt(i);
      if (next === COMMA) {
        i = skipWhitespace(text, i + 1);
        if (container === OBJECT) {
          i = member(text, i);
          if (i < 0) return 'not_json';
        }
        continue value;
      }
      if (next !== (container === OBJECT ? CLOSE_BRACE : CLOSE_BRACKET)) return 'not_json';
      open.pop();
      i++;
    }
  }
}

const OBJECT = 1;
const ARRAY = 2;
const LOWER_T = 0x74;
const LOWER_F = 0x66;
const LOWER_N = 0x6e;
const LOWER_U = 0x75;

/** Characters a string holds as themselves: all but the quote, the backslash and the controls U+0000–U+001F. */
// eslint-disable-next-line no-control-regex -- a JSON string refuses these controls unescaped
const PLAIN_RUN = /[^"\\\u0000-\u001f]*/y;
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const HEX4 = /[0-9a-fA-F]{4}/y;
/** The characters a backslash may precede, other than `u`. */
const SIMPLE_ESCAPES = new Set([QUOTE, BACKSLASH, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74]);

/** JSON's whitespace is these four; `JSON.parse` refuses any other (a BOM, a no-break space). */
function skipWhitespace(text: string, from: number): number {
  let i = from;
  for (;;) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
    i++;
  }
}

/** `"key" :` from `from`, then the whitespace before the member's value: where the value starts, or -1. */
function member(text: string, from: number): number {
  if (text.charCodeAt(from) !== QUOTE) return -1;
  let i = endOfString(text, from);
  if (i < 0) return -1;
  i = skipWhitespace(text, i);
  if (text.charCodeAt(i) !== COLON) return -1;
  return skipWhitespace(text, i + 1);
}

/** The index after the string that opens at `from`, or -1 when it is not a well-formed string. */
function endOfString(text: string, from: number): number {
  let i = from + 1;
  for (;;) {
    PLAIN_RUN.lastIndex = i;
    PLAIN_RUN.test(text);
    i = PLAIN_RUN.lastIndex;
    const c = text.charCodeAt(i);
    if (c === QUOTE) return i + 1;
    if (c !== BACKSLASH) return -1; // a control character, or the end of the text
    const escaped = text.charCodeAt(i + 1);
    if (SIMPLE_ESCAPES.has(escaped)) i += 2;
    else if (escaped === LOWER_U) {
      HEX4.lastIndex = i + 2;
      if (!HEX4.test(text)) return -1;
      i += 6;
    } else return -1;
  }
}
