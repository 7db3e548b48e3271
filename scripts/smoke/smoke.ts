import { runAsMain } from '../cli/command-line.js';
import { smokeCommand } from './smoke-command.js';

runAsMain(smokeCommand);
