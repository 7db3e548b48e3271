/**
 * Whether the strings `JSON.parse` takes out of a text can hold a lone UTF-16 surrogate, which UTF-8 storage
 * cannot keep (issue code `lone_surrogate`). Text decoded from strict UTF-8 holds none itself, so a parsed
 * string can only get one from a `\uD800`–`\uDFFF` escape. Without such an escape in the request's text,
 * validation need not run `isWellFormed` over every string of every trace (7.5 µs of a realistic trace's
 * ~200 µs, measured with `npm run bench -- ingest`). This covers the text's own strings only: JSON held in a
 * string can spell its escapes with escapes (`\u005cud800`), so the tags validation takes out of `attributes`
 * are always checked on their own.
 */
export function mayHoldLoneSurrogates(text: string): boolean {
  // An escaped backslash before `u` (`\\ud800`) is found too: in JSON held in a string that is an escape one
  // level down, and anywhere else a false alarm that only costs the full check.
  for (let i = text.indexOf('\\u'); i !== -1; i = text.indexOf('\\u', i + 2)) {
    const d = text.charCodeAt(i + 2) | 0x20;
    const next = text.charCodeAt(i + 3) | 0x20;
    if (d === 0x64 && (next === 0x38 || next === 0x39 || (next >= 0x61 && next <= 0x66))) return true;
  }
  return false;
}
