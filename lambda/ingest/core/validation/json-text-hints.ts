import { describeValue } from '../../../shared/domain/describe-value.js';

/**
 * The messages for the commonest first mistakes with the members that hold JSON text (`input`, `output`,
 * `attributes`): an object sent where its JSON text is wanted, and plain text that is not JSON. Each says what to
 * send instead, and names what was sent by its type and size only: these members hold prompts and answers, and a
 * message is kept with the response (24 h in an idempotency record). The codes stay the contract's
 * (`invalid_type`, `not_json_string`); only the messages teach.
 */

/** The members whose value is a string holding JSON text. */
export const JSON_TEXT_MEMBERS: ReadonlySet<string> = new Set(['input', 'output', 'attributes']);

const HOW = 'send JSON.stringify(value) (Python: json.dumps(value))';

const wanted = (member: string) => (member === 'attributes' ? 'a string holding a JSON object' : 'a string holding JSON text');

/** For a JSON value sent where a string of JSON text is wanted (`"input": {"q": "hi"}`). */
export function notAStringMessage(member: string, value: unknown): string {
  return `must be ${wanted(member)}, not ${describeValue(value)}: ${HOW}`;
}

/** For a string that is not JSON text (`"output": "hello"`). */
export function notJsonTextMessage(member: string, text: string): string {
  if (member === 'attributes') return `must be ${wanted(member)}, or "": ${HOW}`;
  return `must be ${wanted(member)}, or "": plain text is not JSON (this is ${describeValue(text)}); to store text, ${HOW}`;
}
