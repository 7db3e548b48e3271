import { runAsMain } from '../cli/command-line.js';
import { adminCommand } from './admin-command.js';

runAsMain(adminCommand);
