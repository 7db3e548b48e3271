// Writes the accepted-trace types and the normalizer generated from the trace JSON Schema (see
// accepted-trace-sources.mjs). Runs with `generate`, beside generate-validators.mjs.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { acceptedTraceSources } from './accepted-trace-sources.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { types, normalizer } = acceptedTraceSources(JSON.parse(readFileSync(join(root, 'lambda/ingest/core/validation/trace.schema.json'), 'utf8')));
const typesDir = join(root, 'lambda/shared/domain/generated');
const normalizerDir = join(root, 'lambda/ingest/generated');
mkdirSync(typesDir, { recursive: true });
mkdirSync(normalizerDir, { recursive: true });
writeFileSync(join(typesDir, 'accepted-trace.ts'), types);
writeFileSync(join(normalizerDir, 'normalize-trace.ts'), normalizer);
