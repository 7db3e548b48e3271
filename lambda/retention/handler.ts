import { composeRetentionSweeper, retentionConfigFromEnv } from './compose.js';

// Composition root: configuration is read and clients are created once per container.
export const handler = composeRetentionSweeper(retentionConfigFromEnv());
