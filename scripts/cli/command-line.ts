import { parseArgs, type ParseArgsConfig } from 'node:util';

/** A command line the command refuses: printed as one line and the usage, exit status 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

type Options = NonNullable<ParseArgsConfig['options']>;

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

/**
 * Parses a script's arguments the same way for every command: `--help` or `-h` prints `usage` on
 * stdout (and `undefined` comes back: the command has nothing more to do); an unknown option or a
 * missing value is a {@link UsageError} with the parser's first line, never its stack trace; so is an option
 * given twice.
 */
export function parseCommandLine<T extends Options>(argv: readonly string[], options: T, usage: string, allowPositionals = false) {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(usage.endsWith('\n') ? usage : `${usage}\n`);
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
 * usage error, and exit status 2 for a usage error, 1 for anything else. No stack trace.
 */
export function reportFailure(command: string, usage: string, error: unknown, describe: (error: unknown) => string = firstLine): void {
  process.stderr.write(`${command}: ${describe(error)}\n`);
  if (error instanceof UsageError) process.stderr.write(usage.endsWith('\n') ? usage : `${usage}\n`);
  process.exitCode = error instanceof UsageError ? 2 : 1;
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
