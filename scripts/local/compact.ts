import { runAsMain } from '../cli/command-line.js';
import { compactCommand } from './compact-command.js';

runAsMain(compactCommand);
