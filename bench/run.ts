import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runAsMain } from '../scripts/cli/command-line.js';
import { benchCommand } from './command-line.js';

runAsMain((argv, out) => benchCommand(argv, out, dirname(fileURLToPath(import.meta.url))));
