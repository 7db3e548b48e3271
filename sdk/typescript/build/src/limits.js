/** A batch holds 1 to 500 traces (docs/api.md; sdk/conformance/limits.json holds the same numbers). */
export const MAX_TRACES_PER_BATCH = 500;
/** The decoded (uncompressed) request body the deployed stack accepts: 4 MiB. */
export const MAX_BODY_BYTES = 4_194_304;
