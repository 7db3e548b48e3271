import { readFileSync } from 'node:fs';
import path from 'node:path';
import { CONVENTION_PRECEDENCE, type ConventionField, type ConventionTable, type Reader } from '../../../lambda/ingest/otlp/conventions.js';

const ROOT = path.resolve(__dirname, '../../..');
const doc = readFileSync(path.join(ROOT, 'docs/api.md'), 'utf8');

const FIELD_ROWS: readonly ConventionField[] = ['model', 'input_tokens', 'output_tokens', 'total_tokens', 'input', 'output', 'session_id', 'user_id', 'agent_id', 'agent_name', 'environment'];

function readerCell(reader: Reader): string {
  switch (reader.read) {
    case 'messages-with-instructions':
      return `\`${reader.key}\` (with \`${reader.instructions}\` in front)`;
    case 'event-attribute':
      return `\`${reader.key}\` of the \`${reader.event}\` event`;
    case 'flattened':
      return `\`${reader.prefix}<n>.${reader.strip ?? ''}<field>\``;
    case 'message-events':
      return reader.events.map((event) => `\`${event}\``).join(', ') + ' events';
    default:
      return `\`${reader.key}\``;
  }
}

function kindCell(table: ConventionTable): string {
  const rules = (table.kind ?? []).map((rule) => `\`${rule.key}\`: ${Object.entries(rule.kinds).map(([name, kind]) => `\`${name}\` → ${kind}`).join(', ')}`);
  const llm = (table.llmWhenPresent ?? []).map((key) => `\`${key}\` present → llm`);
  return [...rules, ...llm].join('; ') || '—';
}

/** The source × field table of docs/api.md, as the registry makes it. */
function renderTable(): string {
  const cells = (row: (table: ConventionTable) => string) => CONVENTION_PRECEDENCE.map(row).join(' | ');
  return [
    `| field | ${cells((table) => table.label)} |`,
    `|---|${CONVENTION_PRECEDENCE.map(() => '---').join('|')}|`,
    `| span \`kind\` | ${cells(kindCell)} |`,
    ...FIELD_ROWS.map((field) => `| \`${field}\` | ${cells((table) => (table.fields[field] ?? []).map(readerCell).join(', ') || '—')} |`),
  ].join('\n');
}

describe('docs/api.md, the OTLP mapping', () => {
  it('shows the registry of conventions as it is: one column per source in precedence order, one row per field', () => {
    if (process.env.PRINT_CONVENTIONS_TABLE) process.stdout.write(`${renderTable()}\n`);
    expect(doc).toContain(renderTable());
  });

  it('names each source and what it follows, in precedence order', () => {
    for (const table of CONVENTION_PRECEDENCE) expect(doc).toContain(`**${table.label}**: ${table.follows}`);
    const positions = CONVENTION_PRECEDENCE.map((table) => doc.indexOf(`**${table.label}**: `));
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
  });
});
