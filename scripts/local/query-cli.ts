import { runAsMain } from '../cli/command-line.js';
import { queryCommand } from './query-command.js';

runAsMain(queryCommand);
