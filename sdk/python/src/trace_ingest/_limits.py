"""The service's batch limits (docs/api.md); sdk/conformance/limits.json holds the same numbers."""

MAX_TRACES_PER_BATCH = 500
"""A batch holds 1 to 500 traces."""

MAX_BODY_BYTES = 4_194_304
"""The decoded (uncompressed) request body the deployed stack accepts: 4 MiB."""
