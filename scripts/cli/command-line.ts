import { format, parseArgs, type ParseArgsConfig } from 'node:util';

/** A command line the command refuses: printed as one line and the usage, exit status 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

type Options = NonNullable<ParseArgsConfig['options']>;

/** Where a command writes: its results and `--help` on stdout, errors and progress on stderr. */
export interface CommandOutput {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}

/**
 * A command line as a function: its arguments (without `node` and the script) and where it writes in, its exit
 * status out. It never exits the process, and a failure it expects resolves to its exit status, so a test runs
 * it in-process; only a bug rejects.
 */
export type Command = (argv: readonly string[], out: CommandOutput) => Promise<number>;

/** What a failed command is called in its one line, the usage printed after a usage error, and how its errors read. */
export interface CommandFailure {
  name: string;
  usage: string;
  describe?: (error: unknown) => string;
}

/**
 * A {@link Command} from its body: an error the body throws ends as {@link reportFailure} says, under the name and
 * usage `failure` gives (for these arguments, when it is a function).
 */
export function defineCommand(failure: CommandFailure | ((argv: readonly string[]) => CommandFailure), body: Command): Command {
  return async (argv, out) => {
    try {
      return await body(argv, out);
    } catch (error) {
      const { name, usage, describe } = typeof failure === 'function' ? failure(argv) : failure;
      return reportFailure(out, name, usage, error, describe);
    }
  };
}

/**
 * The thin main of a script: runs `run` on this process's arguments and streams and sets the exit status from its
 * answer. `exit` ends the process at once instead (`npm start`, whose stopped stack may leave handles behind).
 */
export function runAsMain(run: Command, { exit = false } = {}): void {
  // The AWS SDK warns about the Node.js version on every run; a command line's output is not the place for it.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const done = (code: number) => {
    if (exit) process.exit(code);
    process.exitCode = code;
  };
  void run(process.argv.slice(2), process).then(done, (error: unknown) => {
    // Not a failure the command expected: its stack is what a person needs to fix it.
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    done(1);
  });
}

/** A logger for the landing code a command runs (replay): each warning or error one line on the command's stderr, as `console.warn` formats it. */
export function stderrLogger(out: CommandOutput): { warn(message: string, extra?: unknown): void; error(message: string, extra?: unknown): void } {
  const line = (message: string, extra?: unknown) => void out.stderr.write(`${extra === undefined ? message : format(message, extra)}\n`);
  return { warn: line, error: line };
}

/** Writes a usage text with exactly one final newline; `0`, the exit status of `--help`. */
export function printUsage(to: CommandOutput['stdout'], usage: string): 0 {
  to.write(usage.endsWith('\n') ? usage : `${usage}\n`);
  return 0;
}

/**
 * Joins `--per-minute -5` into `--per-minute=-5`, so a value that looks like an option reaches the
 * command's own check (and its message) instead of the argument parser's "ambiguous" error.
 */
export function joinDashValues(argv: readonly string[], options: Options): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const next = argv[i + 1];
    const takesValue = arg.startsWith('--') && options[arg.slice(2)]?.type === 'string';
    if (takesValue && next !== undefined && next.startsWith('-') && !next.startsWith('--')) {
      out.push(`${arg}=${next}`);
      i++;
    } else out.push(arg);
  }
  return out;
}

/**
 * Refuses an option given more than once (`--per-minute 5 --per-minute 7`), which `parseArgs` settles by keeping
 * the last without a word; options declared `multiple` may repeat. `tokens` come from `parseArgs({ tokens: true })`.
 */
export function refuseRepeatedOptions(tokens: readonly { kind: string; name?: string }[] | undefined, options: Options): void {
  const seen = new Set<string>();
  for (const token of tokens ?? []) {
    if (token.kind !== 'option' || token.name === undefined || options[token.name]?.multiple) continue;
    if (seen.has(token.name)) throw new UsageError(`option --${token.name} is given more than once; give it once`);
    seen.add(token.name);
  }
}

/** `--help` or `-h` anywhere on the command line. */
export const helpAsked = (argv: readonly string[]): boolean => argv.includes('--help') || argv.includes('-h');

/**
 * Parses a script's arguments the same way for every command: `--help` or `-h` prints `usage` on
 * `out.stdout` (and `undefined` comes back: the command has nothing more to do); an unknown option or a
 * missing value is a {@link UsageError} with the parser's first line, never its stack trace; so is an option
 * given twice.
 */
export function parseCommandLine<T extends Options>(argv: readonly string[], options: T, usage: string, out: CommandOutput, allowPositionals = false) {
  if (helpAsked(argv)) {
    printUsage(out.stdout, usage);
    return undefined;
  }
  try {
    const { tokens, ...parsed } = parseArgs({ args: joinDashValues(argv, options), options, allowPositionals, strict: true, tokens: true });
    refuseRepeatedOptions(tokens, options);
    return parsed;
  } catch (error) {
    throw new UsageError((error as Error).message.split('\n')[0] ?? 'invalid arguments');
  }
}

/**
 * How every command ends on an error: one line on stderr naming the command, the usage after a
 * usage error; the exit status, 2 for a usage error, 1 for anything else. No stack trace.
 */
export function reportFailure(out: CommandOutput, command: string, usage: string, error: unknown, describe: (error: unknown) => string = firstLine): number {
  out.stderr.write(`${command}: ${describe(error)}\n`);
  if (!(error instanceof UsageError)) return 1;
  printUsage(out.stderr, usage);
  return 2;
}

function firstLine(error: unknown): string {
  return missingAwsSetup(error) ?? ((error as Error)?.message ?? String(error)).split('\n')[0] ?? '';
}

/**
 * What to set when the AWS SDK found no credentials or no region (its own words, "Could not load credentials
 * from any providers", name neither); `undefined` for any other error.
 */
export function missingAwsSetup(error: unknown): string | undefined {
  const { name = '', message = String(error) } = (error ?? {}) as { name?: string; message?: string };
  if (/region is missing/i.test(message)) return 'no AWS region: set AWS_REGION';
  if (name === 'CredentialsProviderError' || /could not load credentials/i.test(message)) {
    return 'no AWS credentials: set AWS_PROFILE (a profile from `aws configure` or `aws sso login`), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary credentials)';
  }
  return undefined;
}
