/** One line of the benchmark table (`npm run bench`), also written to bench/results.json. */
export interface BenchResult {
  /** Which part of the system: `ingest`, `landing`, `cold-start`, `rate-windows`, `local-stack`, `hot-org`, `compaction`. */
  group: string;
  /** What was measured, e.g. `handler CPU per trace`. */
  metric: string;
  value: number;
  unit: string;
  /** The baseline measured in the same run, when the figure is a comparison. */
  baseline?: number;
  /** value / baseline (or the inverse, as `note` says), when there is a baseline. */
  ratio?: number;
  /** Target for the ratio, e.g. `<= 1.5`. */
  target?: string;
  note?: string;
}
