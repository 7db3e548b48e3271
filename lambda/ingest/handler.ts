import { composeIngest, ingestConfigFromEnv } from './compose.js';

// Configuration is read and clients are created once per container.
export const handler = composeIngest(ingestConfigFromEnv());
