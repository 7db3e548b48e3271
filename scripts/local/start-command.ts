import { INGEST_ROUTE, OTLP_ROUTE } from '../../lambda/shared/service-constants.js';
import { defineCommand, parseCommandLine } from '../cli/command-line.js';
import { ENGINE_PORT_OPTIONS, localPorts, portsInUse } from './ports.js';
import { FIRST_QUERY, READY_LINE, START_USAGE } from './usage.js';
import { type DemoTenant, startLocalStack } from '../../devkit/local-stack/local-stack.js';
import { demoEnvironment } from '../../devkit/local-stack/demo-env.js';
import { type LocalPaths, localPaths } from '../../devkit/local-stack/local-state.js';

function banner(api: string, demo: DemoTenant | undefined, created: boolean, paths: LocalPaths): string {
  const ingestUrl = `${api}${INGEST_ROUTE.path}`;
  const lines = [
    '',
    'Trace Ingest is running locally.',
    `  API      POST ${ingestUrl}`,
    `  OTLP     POST ${api}${OTLP_ROUTE.path}   (OTEL_EXPORTER_OTLP_ENDPOINT=${demoEnvironment(api, undefined).OTEL_EXPORTER_OTLP_ENDPOINT})`,
    `  state    ${paths.root}  (kept across restarts; npm start -- --reset starts empty)`,
    `  env      source ${paths.demoEnv}   (the demo key and these URLs as TRACE_INGEST_* and OTEL_EXPORTER_OTLP_* variables)`,
    '',
  ];
  if (demo) {
    lines.push(
      `Demo organization '${demo.orgId}' with workspace '${demo.workspaceSlug}'${created ? ' (created now)' : ''}:`,
      `  organization key  ${demo.orgKey.apiKey}`,
      `  workspace key     ${demo.workspaceKey.apiKey}   (traces must set "workspace_slug": "${demo.workspaceSlug}")`,
      '',
      'Try it:',
      `  curl -s ${ingestUrl} -H 'X-API-Key: ${demo.orgKey.apiKey}' -H 'Content-Type: application/json' \\`,
      `    -d '{"traces":[{"timestamp":"'$(date -u +%Y-%m-%dT%H:%M:%SZ)'","root_span_name":"hello","spans":[{"timestamp":"'$(date -u +%Y-%m-%dT%H:%M:%SZ)'","name":"hello"}]}]}'`,
      `  npm run query -- "${FIRST_QUERY}"`,
    );
  } else {
    lines.push(`The demo organization exists but ${paths.demoKeys} is gone: create a key with`, '  npm run --silent admin -- key create --org demo');
  }
  lines.push('', READY_LINE, '');
  return lines.join('\n');
}

const OPTIONS = { reset: { type: 'boolean', default: false }, bundled: { type: 'boolean', default: false }, ...ENGINE_PORT_OPTIONS } as const;

/**
 * `npm start`: starts the local stack, prints the banner and serves until a signal stops it; the exit status
 * once stopped. A second signal, or a stop that takes 20 s, exits the process at once.
 */
export const startCommand = defineCommand({ name: 'npm start', usage: START_USAGE }, async (argv, out) => {
  const parsed = parseCommandLine(argv, OPTIONS, START_USAGE, out);
  if (!parsed) return 0;
  const { values } = parsed;
  const ports = localPorts(values, process.env);
  const paths = localPaths();
  const log = (line: string) => void out.stderr.write(`[local] ${line}\n`);

  log(`starting DynamoDB Local (a Java process, the slowest: usually 4-10 s, 20 s or more on a busy machine), kinesalite and s3rver with state in ${paths.root}${values.reset ? ' (reset)' : ''}`);
  // --bundled runs the bundles cdk deploy ships, synthesized from this checkout (process.cwd(): npm start runs at the root).
  const stack = await startLocalStack({ paths, port: ports.api, enginePorts: ports.engines, reset: values.reset, log, ...(values.bundled ? { bundled: { projectRoot: process.cwd() } } : {}) }).catch(async (error: unknown) => {
    // An engine that cannot bind says so in its own words (a Java stack trace, EADDRINUSE): name the setting instead.
    const busy = await portsInUse(ports);
    throw busy.length > 0 ? new Error(`${busy.join(', ')} already in use by another process: choose another, or leave it unset for a free one`) : error;
  });
  out.stdout.write(banner(stack.endpoints.api, stack.demo, stack.demoCreated, paths));
  return untilStopped(stack, log);
});

/** Serves until a signal (or the parent's death) stops the stack: 0 once stopped, 1 when stopping failed. */
function untilStopped(stack: { stop(): Promise<void> }, log: (line: string) => void): Promise<number> {
  return new Promise((resolve) => {
    let firstSignalAt: number | undefined;
    const shutdown = (signal: NodeJS.Signals | 'parent gone') => {
      if (firstSignalAt !== undefined) {
        // npm and tsx relay the terminal's signal, so one Ctrl-C arrives more than once.
        if (Date.now() - firstSignalAt < 1_000) return;
        log(`${signal} again: exiting now`);
        process.exit(130);
      }
      firstSignalAt = Date.now();
      log(`${signal}: stopping`);
      setTimeout(() => {
        log('still stopping after 20 s: exiting now');
        process.exit(1);
      }, 20_000).unref();
      stack.stop().then(
        () => {
          log('stopped');
          resolve(0);
        },
        (error: unknown) => {
          log(`stop failed: ${(error as Error).message}`);
          resolve(1);
        },
      );
    };
    process.on('SIGINT', shutdown);
    process.on('SIGTERM', shutdown);
    process.on('SIGHUP', shutdown);
    // A `kill -9` of npm or of tsx's launcher cannot be relayed, and this process would go on serving, orphaned
    // (DynamoDB Local watches this process in turn; see engines.ts). A new parent is the sign.
    const parent = process.ppid;
    const watch = setInterval(() => {
      if (process.ppid === parent) return;
      clearInterval(watch);
      shutdown('parent gone');
    }, 1_000).unref();
  });
}
