import { mergeMutationRows, moduleOfRow } from '../../../bench/mutation.js';
import type { BenchResult } from '../../../bench/types.js';

const row = (name: string, value: number, group = 'mutation'): BenchResult => ({
  group,
  metric: `mutation score: some title (${name}; 1 of 2 mutants killed, 0 compile errors left out, 3 s)`,
  value,
  unit: '%',
});

describe('the mutation rows a run leaves', () => {
  it('reads the module out of a row', () => {
    expect(moduleOfRow(row('otlp-decoder', 1))).toBe('otlp-decoder');
    expect(moduleOfRow({ group: 'mutation', metric: 'no module here', value: 1, unit: '%' })).toBeUndefined();
  });

  it('keeps the last rows of the modules a run did not measure, replaces the others, in the registry order', () => {
    const previous = [row('sdk-ts-spool', 10), row('idempotency', 20), row('ingest', 5, 'ingest')];
    const merged = mergeMutationRows(previous, [row('idempotency', 90), row('rate-windows', 80)]);
    expect(merged.map((r) => [moduleOfRow(r), r.value])).toEqual([
      ['rate-windows', 80],
      ['idempotency', 90],
      ['sdk-ts-spool', 10],
    ]);
  });

  it('drops a row whose module left the registry', () => {
    expect(mergeMutationRows([row('gone-module', 50)], [])).toEqual([]);
  });
});
