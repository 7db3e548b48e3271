import { composeLanding, landingConfigFromEnv } from './compose.js';

// Configuration is read and the client is created once per container.
export const handler = composeLanding(landingConfigFromEnv());
