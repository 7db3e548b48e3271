import { runAsMain } from '../cli/command-line.js';
import { opsCommand } from './ops-command.js';

runAsMain(opsCommand);
