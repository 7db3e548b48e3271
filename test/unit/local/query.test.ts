import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isoFromMicros, queryLanded } from '../../../scripts/local/query.js';
import { queryCommand } from '../../../scripts/local/query-command.js';
import { QUERY_USAGE } from '../../../scripts/local/usage.js';
import { runCommand } from '../../support/run-command.js';

describe('npm run query', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'query-test-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('prints the result of every statement, in order', async () => {
    const results = await queryLanded('SELECT 1 AS a; SELECT 2 AS b, 3 AS c; SELECT count(*) AS n FROM traces', { s3Directory: dir, bucket: 'data' });
    expect(results.map((r) => r.columns)).toEqual([['a'], ['b', 'c'], ['n']]);
    expect(results.map((r) => r.rows)).toEqual([[{ a: 1 }], [{ b: 2, c: 3 }], [{ n: 0 }]]);
  });

  it('gives BIGINT as numbers (strings beyond 2^53) and timestamps as ISO 8601 with microseconds', async () => {
    const [result] = await queryLanded(
      "SELECT 42::BIGINT AS small, 9007199254740993::BIGINT AS huge, TIMESTAMPTZ '2026-11-22 12:00:00.123456+00' AS tz, TIMESTAMP '1969-12-31 23:59:59.999999' AS old, DATE '2026-11-22' AS d",
      { s3Directory: dir, bucket: 'data' },
    );
    expect(result?.rows).toEqual([
      { small: 42, huge: '9007199254740993', tz: '2026-11-22T12:00:00.123456Z', old: '1969-12-31T23:59:59.999999Z', d: '2026-11-22' },
    ]);
  });

  it('formats microseconds before and after the epoch', () => {
    expect(isoFromMicros(0n)).toBe('1970-01-01T00:00:00.000000Z');
    expect(isoFromMicros(-1n)).toBe('1969-12-31T23:59:59.999999Z');
    expect(isoFromMicros(1_795_348_800_000_001n)).toBe('2026-11-22T12:00:00.000001Z');
  });

  it('prints usage to stdout for --help and exits 0', async () => {
    expect(await runCommand(queryCommand, ['--help'])).toEqual({ code: 0, stdout: QUERY_USAGE, stderr: '' });
  });

  it('prints each statement\'s result as a table, or with --json as one JSON array per line', async () => {
    const sql = 'SELECT 1 AS a; SELECT 2 AS b';
    const env = { TRACE_INGEST_LOCAL_DIR: dir };
    expect(await runCommand(queryCommand, [sql], env)).toEqual({ code: 0, stdout: 'a\n-\n1\n(1 row)\n\nb\n-\n2\n(1 row)\n', stderr: '' });
    expect(await runCommand(queryCommand, ['--json', sql], env)).toEqual({ code: 0, stdout: '[{"a":1}]\n[{"b":2}]\n', stderr: '' });
  });
});
