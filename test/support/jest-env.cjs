// Metrics are printed as EMF to stdout in Lambda; in tests they would only be noise.
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
