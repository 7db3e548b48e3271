// dist/cjs holds the CommonJS build: its own package.json tells Node (and TypeScript) so, inside a "type": "module" package.
import { writeFileSync } from 'node:fs';

writeFileSync(new URL('./dist/cjs/package.json', import.meta.url), '{ "type": "commonjs" }\n');
