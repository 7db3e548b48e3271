/** Client values quoted back in a response are cut here, so no input can blow up the answer. */
const MAX_ECHO_CHARACTERS = 256;

/** A value the client sent, fit to quote back in a response. */
export function echo(value: string): string {
  return value.length <= MAX_ECHO_CHARACTERS ? value : `${value.slice(0, MAX_ECHO_CHARACTERS)}…`;
}
