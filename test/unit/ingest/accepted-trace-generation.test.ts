import { readFileSync } from 'node:fs';
import path from 'node:path';
// @ts-expect-error -- a build script in plain JavaScript, without type declarations
import { acceptedTraceSources } from '../../../scripts/accepted-trace-sources.mjs';
import { validateTrace } from '../../../lambda/ingest/core/validation/validate-trace.js';
import { NOW_MICROS, iso } from '../../../devkit/builders/trace-builders.js';

type Schema = { properties: Record<string, Record<string, unknown>>; required: string[]; $defs: { span: { properties: Record<string, Record<string, unknown>>; required: string[] } } };
const ROOT = path.resolve(__dirname, '../../..');
const schemaText = readFileSync(path.join(ROOT, 'lambda/ingest/core/validation/trace.schema.json'), 'utf8');
const schema = () => JSON.parse(schemaText) as Schema;
const generate = (s: Schema) => acceptedTraceSources(s) as { types: string; normalizer: string };

describe('the accepted trace, generated from the JSON Schema', () => {
  it('is what the build wrote: the types and the normalizer on disk come from the schema as it is', () => {
    const { types, normalizer } = generate(schema());
    expect(readFileSync(path.join(ROOT, 'lambda/shared/domain/generated/accepted-trace.ts'), 'utf8')).toBe(types);
    expect(readFileSync(path.join(ROOT, 'lambda/ingest/generated/normalize-trace.ts'), 'utf8')).toBe(normalizer);
  });

  it('copies exactly the schema members of a trace and of a span, so a schema field cannot be left out', () => {
    const result = validateTrace({ timestamp: iso(), unknown: 1, spans: [{ timestamp: iso(), name: 'n' }] }, NOW_MICROS, () => '00000000-0000-4000-8000-000000000000');
    if (!result.ok) throw new Error('a minimal trace must validate');
    const { spans, ...trace } = result.trace;
    expect(Object.keys({ ...trace, spans })).toEqual(Object.keys(schema().properties));
    expect(Object.keys(spans[0]!)).toEqual(Object.keys(schema().$defs.span.properties));
  });

  it('takes a field added to the schema into the accepted types and the normalizer, with its default, and nothing else to edit', () => {
    const extended = schema();
    extended.properties.region = { type: ['string', 'null'], default: 'eu-west-1', maxLength: 64 };
    extended.$defs.span.properties.priority = { type: ['integer', 'null'], default: 3 };
    extended.$defs.span.properties.cache = { enum: ['hit', 'miss', null], default: 'miss' };
    const { types, normalizer } = generate(extended);
    expect(types).toContain('  region: string;\n');
    expect(types).toContain('  priority: number;\n');
    expect(types).toContain('  cache: "hit" | "miss";\n');
    expect(normalizer).toContain(`region: typeof input.region === 'string' ? input.region : "eu-west-1",`);
    expect(normalizer).toContain(`priority: typeof input.priority === 'number' ? input.priority : 3,`);
    expect(normalizer).toContain(`cache: (typeof input.cache === 'string' ? input.cache : "miss") as "hit" | "miss",`);
  });

  it('refuses a schema it cannot turn into code: an optional field without a default, or an unknown rewrite', () => {
    const noDefault = schema();
    noDefault.properties.region = { type: ['string', 'null'] };
    expect(() => generate(noDefault)).toThrow('region: an optional field needs a default in the schema');
    const unknownRewrite = schema();
    unknownRewrite.properties.region = { type: ['string', 'null'], default: '', 'x-normalize': 'upper-case' };
    expect(() => generate(unknownRewrite)).toThrow("region: unknown x-normalize 'upper-case'");
  });
});
