import { OTLP_ROUTE } from '../../lambda/shared/service-constants.js';

/**
 * The variables the README's examples read, for the stack on `api`: both SDKs' key and base URL, and what an
 * OpenTelemetry exporter reads. Without a demo key (its file deleted) only the URLs.
 */
export function demoEnvironment(api: string, orgKey: string | undefined): Record<string, string> {
  return {
    TRACE_INGEST_BASE_URL: api,
    ...(orgKey === undefined ? {} : { TRACE_INGEST_API_KEY: orgKey }),
    // The exporter appends /v1/traces to the endpoint itself.
    OTEL_EXPORTER_OTLP_ENDPOINT: `${api}${OTLP_ROUTE.path.replace(/\/v1\/traces$/, '')}`,
    ...(orgKey === undefined ? {} : { OTEL_EXPORTER_OTLP_HEADERS: `X-API-Key=${orgKey}` }),
  };
}

/** `demo.env`: one `export` per variable, single-quoted, for `source` in bash or zsh. */
export function demoEnvFile(file: string, api: string, orgKey: string | undefined): string {
  const quote = (value: string) => `'${value.replaceAll("'", `'\\''`)}'`;
  const lines = [
    `# The demo organization key and the URLs of the local stack on ${api}, written by npm start and deleted when it stops.`,
    `# Load them into a shell with: source ${file}`,
    ...(orgKey === undefined ? ['# No demo key: demo-keys.json is gone. Create a key with npm run --silent admin -- key create --org demo'] : []),
    ...Object.entries(demoEnvironment(api, orgKey)).map(([name, value]) => `export ${name}=${quote(value)}`),
  ];
  return `${lines.join('\n')}\n`;
}
