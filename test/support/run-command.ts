import type { Command } from '../../scripts/cli/command-line.js';

/** What a command line did: its exit status and everything it wrote. */
export interface CommandOutcome {
  code: number;
  stdout: string;
  stderr: string;
}

let running = false;

/**
 * Runs a command line in-process, as its script's main would, and collects what it writes. `env` is set in
 * process.env for the run and restored after (the AWS SDK reads process.env itself), so runs must not overlap:
 * one that starts while another runs is refused.
 */
export async function runCommand(command: Command, argv: readonly string[], env: Record<string, string> = {}): Promise<CommandOutcome> {
  if (running) throw new Error('runCommand: one command at a time (each sets process.env for its run)');
  running = true;
  const saved = Object.fromEntries(Object.keys(env).map((name) => [name, process.env[name]]));
  Object.assign(process.env, env);
  const written = { stdout: '', stderr: '' };
  try {
    const code = await command(argv, {
      stdout: { write: (text: string) => (written.stdout += text) },
      stderr: { write: (text: string) => (written.stderr += text) },
    });
    return { code, ...written };
  } finally {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    running = false;
  }
}
