import { defineCommand, parseCommandLine, UsageError } from '../cli/command-line.js';
import { type QueryResult, queryLanded } from './query.js';
import { QUERY_USAGE } from './usage.js';

function cell(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** A plain text table, one line per row. */
export function formatTable({ columns, rows }: QueryResult, maxWidth = 60): string {
  const clip = (text: string) => (text.length > maxWidth ? `${text.slice(0, maxWidth - 1)}…` : text);
  const cells = rows.map((row) => columns.map((column) => clip(cell(row[column]).replace(/\s+/g, ' '))));
  const widths = columns.map((column, i) => Math.max(column.length, ...cells.map((line) => line[i]?.length ?? 0)));
  const line = (values: string[]) => values.map((value, i) => value.padEnd(widths[i] ?? 0)).join(' | ').trimEnd();
  return [line(columns), widths.map((width) => '-'.repeat(width)).join('-+-'), ...cells.map(line), `(${rows.length} row${rows.length === 1 ? '' : 's'})`].join('\n');
}

/** `npm run query`: the result of every statement, as tables or (`--json`) one JSON array per line. */
export const queryCommand = defineCommand({ name: 'query', usage: QUERY_USAGE }, async (argv, out) => {
  const parsed = parseCommandLine(argv, { json: { type: 'boolean', default: false } }, QUERY_USAGE, out, true);
  if (!parsed) return 0;
  const { values, positionals } = parsed;
  const sql = positionals.join(' ').trim();
  if (sql === '') throw new UsageError('no SQL given');
  const results = await queryLanded(sql);
  const printed = results.map((result) => (values.json ? JSON.stringify(result.rows) : formatTable(result)));
  out.stdout.write(`${printed.join(values.json ? '\n' : '\n\n')}\n`);
  return 0;
});
