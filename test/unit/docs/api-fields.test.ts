import { readFileSync } from 'node:fs';
import path from 'node:path';
import { validateTrace } from '../../../lambda/ingest/core/validation/validate-trace.js';
import { NOW_MICROS, iso } from '../../../devkit/builders/trace-builders.js';

const ROOT = path.resolve(__dirname, '../../..');
const doc = readFileSync(path.join(ROOT, 'docs/api.md'), 'utf8');
const schema = JSON.parse(readFileSync(path.join(ROOT, 'lambda/ingest/core/validation/trace.schema.json'), 'utf8')) as SchemaObject;

interface SchemaProperty {
  type?: string | string[];
  enum?: (string | null)[];
  pattern?: string;
}
interface SchemaObject {
  required: string[];
  properties: Record<string, SchemaProperty>;
  $defs: { span: SchemaObject };
}
interface Row {
  field: string;
  type: string;
  required: string;
  default: string;
}

/** The rows of the table whose header starts with `| <title> |`. */
function table(title: string): Row[] {
  const lines = doc.split('\n');
  const start = lines.findIndex((line) => line.startsWith(`| ${title} |`));
  expect(start).toBeGreaterThan(-1);
  const rows: Row[] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    const [field, type, required, fallback] = line.split(' | ').map((cell) => cell.replace(/^\| ?| ?\|$/g, '').trim());
    rows.push({ field: (field ?? '').replaceAll('`', ''), type: type ?? '', required: required ?? '', default: (fallback ?? '').replaceAll('`', '') });
  }
  return rows;
}

/** The word the type column must start with, from the schema. */
function typeWord(property: SchemaProperty): RegExp {
  if (property.enum) return /^one of /;
  const types = (Array.isArray(property.type) ? property.type : [property.type]).filter((t) => t !== 'null');
  if (property.pattern?.includes('[0-9a-fA-F]{8}')) return /^UUID string/;
  return new RegExp(`^${types[0] === 'array' ? 'array' : types[0]}`);
}

function checkAgainstSchema(rows: Row[], shape: SchemaObject, normalized: Record<string, unknown>): void {
  expect(rows.map((row) => row.field)).toEqual(Object.keys(shape.properties));
  for (const row of rows) {
    const property = shape.properties[row.field] as SchemaProperty;
    expect({ field: row.field, type: row.type }).toEqual({ field: row.field, type: expect.stringMatching(typeWord(property)) });
    if (property.enum) {
      const values = property.enum.filter((value) => value !== null).map((value) => `\`${value}\``);
      expect(row.type).toBe(`one of ${values.join(', ')}`);
    }
    expect({ field: row.field, required: row.required }).toEqual({ field: row.field, required: shape.required.includes(row.field) ? 'yes' : 'no' });
    const value = normalized[row.field];
    if (row.default === '—') continue;
    if (row.default === 'generated') expect(value).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    else expect({ field: row.field, default: value }).toEqual({ field: row.field, default: JSON.parse(row.default) });
  }
}

describe('the trace and span field tables of docs/api.md', () => {
  it('list every trace field of the schema, in order, with its type, whether it is required and the default the service fills in', () => {
    const result = validateTrace({ timestamp: iso() }, NOW_MICROS, () => '00000000-0000-4000-8000-000000000000');
    if (!result.ok) throw new Error('a minimal trace must validate');
    checkAgainstSchema(table('trace field'), schema, result.trace as unknown as Record<string, unknown>);
  });

  it('list every span field of the schema, in order, with its type, whether it is required and the default the service fills in', () => {
    const result = validateTrace({ timestamp: iso(), spans: [{ timestamp: iso(), name: 'n' }] }, NOW_MICROS, () => '00000000-0000-4000-8000-000000000000');
    if (!result.ok) throw new Error('a minimal span must validate');
    checkAgainstSchema(table('span field'), schema.$defs.span, result.trace.spans[0] as unknown as Record<string, unknown>);
  });
});
