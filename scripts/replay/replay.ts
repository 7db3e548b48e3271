import { runAsMain } from '../cli/command-line.js';
import { replayCommand } from './replay-command.js';

runAsMain(replayCommand);
