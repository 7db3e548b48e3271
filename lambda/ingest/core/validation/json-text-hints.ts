/**
 * The messages for the commonest first mistakes with the members that hold JSON text (`input`, `output`,
 * `attributes`): an object sent where its JSON text is wanted, and plain text that is not JSON. Each says what to
 * send instead, with the value it should have been when that is short enough to quote. The codes stay the
 * contract's (`invalid_type`, `not_json_string`); only the messages teach.
 */

/** The members whose value is a string holding JSON text. */
export const JSON_TEXT_MEMBERS: ReadonlySet<string> = new Set(['input', 'output', 'attributes']);

/** Quotes longer than this are left out: a message stays one readable line. */
const QUOTE_LIMIT = 60;

const HOW = 'send JSON.stringify(value) (Python: json.dumps(value))';

/** What was sent, as JSON names it. */
function kindOf(value: unknown): string {
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

/** `value` as the JSON string that should have been sent, or `undefined` when too long to quote. */
function asSent(value: unknown): string | undefined {
  const text = JSON.stringify(value);
  if (text === undefined) return undefined;
  const sent = JSON.stringify(text);
  return sent.length <= QUOTE_LIMIT ? sent : undefined;
}

const withQuote = (message: string, value: unknown): string => {
  const sent = asSent(value);
  return sent === undefined ? message : `${message}, here ${sent}`;
};

const wanted = (member: string) => (member === 'attributes' ? 'a string holding a JSON object' : 'a string holding JSON text');

/** For a JSON value sent where a string of JSON text is wanted (`"input": {"q": "hi"}`). */
export function notAStringMessage(member: string, value: unknown): string {
  return withQuote(`must be ${wanted(member)}, not ${kindOf(value)}: ${HOW}`, value);
}

/** For a string that is not JSON text (`"output": "hello"`). */
export function notJsonTextMessage(member: string, text: string): string {
  if (member === 'attributes') return `must be ${wanted(member)}, or "": ${HOW}`;
  return withQuote(`must be ${wanted(member)}, or "": plain text is not JSON; to store text, ${HOW}`, text);
}
