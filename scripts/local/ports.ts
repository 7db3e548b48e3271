import { createServer } from 'node:net';
import { UsageError } from '../cli/command-line.js';
import { DEFAULT_LOCAL_PORT } from './usage.js';

/** The engines whose port `npm start` takes, each from a flag or a variable of the same name; 0 or absent picks a free one. */
export const ENGINE_PORTS = {
  dynamodb: { flag: 'dynamodb-port', variable: 'DYNAMODB_PORT' },
  kinesis: { flag: 'kinesis-port', variable: 'KINESIS_PORT' },
  s3: { flag: 's3-port', variable: 'S3_PORT' },
} as const;

export type EngineName = keyof typeof ENGINE_PORTS;

/** The options `npm start` declares for the engine ports. */
export const ENGINE_PORT_OPTIONS = Object.fromEntries(Object.values(ENGINE_PORTS).map(({ flag }) => [flag, { type: 'string' }])) as Record<
  (typeof ENGINE_PORTS)[EngineName]['flag'],
  { type: 'string' }
>;

export interface LocalPorts {
  api: number;
  engines: Record<EngineName, number>;
}

/** A TCP port given as text, or a {@link UsageError} that names where it came from. */
export function tcpPort(source: string, text: string): number {
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65_535) throw new UsageError(`${source} must be a TCP port (0-65535), not '${text}'`);
  return port;
}

/**
 * The ports of `npm start`: the API's from `PORT` (default 3000), each engine's from its flag, else its
 * variable, else 0 (a free port, so two stacks on one machine never collide unless told to).
 */
export function localPorts(flags: Partial<Record<string, string | boolean | undefined>>, env: NodeJS.ProcessEnv): LocalPorts {
  const api = env.PORT === undefined ? DEFAULT_LOCAL_PORT : tcpPort('PORT', env.PORT);
  const engines = Object.fromEntries(
    Object.entries(ENGINE_PORTS).map(([engine, { flag, variable }]) => {
      const fromFlag = flags[flag];
      if (typeof fromFlag === 'string') return [engine, tcpPort(`--${flag}`, fromFlag)];
      const fromEnv = env[variable];
      return [engine, fromEnv === undefined || fromEnv === '' ? 0 : tcpPort(variable, fromEnv)];
    }),
  ) as Record<EngineName, number>;
  return { api, engines };
}

/** Where each port of {@link LocalPorts} is set, as a person would change it. */
const SOURCES: Record<'api' | EngineName, string> = {
  api: 'PORT',
  ...(Object.fromEntries(Object.entries(ENGINE_PORTS).map(([engine, { flag, variable }]) => [engine, `${variable} or --${flag}`])) as Record<EngineName, string>),
};

function inUse(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(true));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(false)));
  });
}

/**
 * The ports a person chose (not 0) that another process holds, each with where it was set: asked after a start
 * failed, so the answer names the setting to change rather than an engine's bind error.
 */
export async function portsInUse(ports: LocalPorts): Promise<string[]> {
  const chosen = [['api', ports.api] as const, ...Object.entries(ports.engines)].filter(([, port]) => port !== 0);
  const busy: string[] = [];
  for (const [name, port] of chosen) if (await inUse(port)) busy.push(`port ${port} (${SOURCES[name as 'api' | EngineName]})`);
  return busy;
}
