import { runAsMain } from '../cli/command-line.js';
import { startCommand } from './start-command.js';

// Exits as soon as the command is done: a failed start may leave an engine's handle behind, and a stopped stack has nothing left to wait for.
runAsMain(startCommand, { exit: true });
