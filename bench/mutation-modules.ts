/**
 * The critical modules that mutation testing watches (`npm run bench -- mutation`, docs/mutation.md): what is
 * mutated and which tests must catch it. One row of `bench/results.json` per module.
 *
 * `tests` are the unit tests that own the module. A mutant no listed test catches survives even if some other
 * suite would notice: the score says whether the module's own tests guard it.
 */
export interface MutationModule {
  name: string;
  /** What it is, for the table. */
  title: string;
  /** Stryker `mutate` patterns (globs; `file.ts:from-to` for a line range). */
  mutate: string[];
  /** How its tests run: jest (the unit setup, these files only), or node:test files of the TypeScript SDK, built by tsc. */
  runner: 'jest' | 'sdk-typescript';
  /** Test files, from the project root (for `sdk-typescript`: the built `.test.js` files). */
  tests: string[];
}

const sdkTests = (...names: string[]) => names.map((name) => `sdk/typescript/build/test/${name}.test.js`);

export const MUTATION_MODULES: readonly MutationModule[] = [
  {
    name: 'rate-windows',
    title: 'rate windows and leases',
    mutate: ['lambda/ingest/core/rate/**/*.ts', '!lambda/ingest/core/rate/**/ports.ts', 'lambda/ingest/adapters/rate/*.ts', 'lambda/shared/domain/rate-windows.ts'],
    runner: 'jest',
    // leasing-rate-limiter.test.ts's two simulations cover nearly every leasing mutant: under MUTATION_TESTS they run
    // smaller (0.5 s and 0.05 s instead of 16 s and 1.5 s, the same assertions); the focused tests over the port
    // ("at the moments it acts") pin the policy's moments, sizes and give-backs.
    tests: [
      'test/unit/rate/dynamo-semantics.test.ts',
      'test/unit/rate/leasing-rate-limiter.test.ts',
      'test/unit/ingest/adapters/rate/dynamodb-rate-limiter.test.ts',
      'test/unit/ingest/adapters/rate/dynamodb-window-usage.test.ts',
      'test/unit/ingest/core/rate/reserve-rate-windows.test.ts',
      'test/unit/ingest/core/rate/read-quota-state.test.ts',
      'test/unit/ingest/rate-windows.test.ts',
      'test/unit/ingest/quota-headers.test.ts',
      'test/unit/ingest/window-usage-cache.test.ts',
    ],
  },
  {
    name: 'idempotency',
    title: 'idempotency',
    mutate: ['lambda/ingest/core/idempotency/**/*.ts', '!lambda/ingest/core/idempotency/**/ports.ts', 'lambda/ingest/adapters/idempotency/*.ts'],
    runner: 'jest',
    tests: ['test/unit/ingest/idempotency.test.ts', 'test/unit/ingest/adapters/idempotency/dynamodb-idempotency-store.test.ts'],
  },
  {
    name: 'body-and-limits',
    title: 'body decoding and the request limits',
    mutate: ['lambda/ingest/http/decode-body.ts', 'lambda/shared/request-limits.ts', 'lambda/shared/domain/json-limits.ts'],
    runner: 'jest',
    tests: [
      'test/unit/ingest/http/decode-body.test.ts',
      'test/unit/shared/request-limits.test.ts',
      'test/unit/shared/json-limits.test.ts',
      'test/unit/ingest/gateway-content-encoding.test.ts',
    ],
  },
  {
    name: 'route-validation',
    title: "the JSON and OTLP routes' validation",
    // The core's rules over both routes' typed drafts (core/draft.ts) and the JSON route's batch envelope.
    mutate: ['lambda/ingest/core/validation/**/*.ts', 'lambda/ingest/core/draft.ts', 'lambda/ingest/json/parse-batch.ts'],
    runner: 'jest',
    // The focused tests. one-core.test.ts (the whole handler on a harness, 1.7 s a file), accepted-trace-generation
    // (the generated normalizer) and otlp/map-export (the OTLP mapping) cover most mutants but kill none these do
    // not: they run in npm test, not per mutant.
    tests: [
      'test/unit/ingest/validate-trace.test.ts',
      'test/unit/ingest/validate-trace.messages.test.ts',
      'test/unit/ingest/validate-draft.test.ts',
      'test/unit/ingest/validate-traces.test.ts',
      'test/unit/ingest/timestamps.test.ts',
      'test/unit/ingest/timestamps.sweep.test.ts',
      'test/unit/ingest/json/parse-batch.test.ts',
    ],
  },
  {
    name: 'tenancy-store',
    title: 'the tenancy store',
    // The table's reads, listings and writes, and how a stored item is read back (what the CLI would refuse included).
    mutate: ['lambda/tenancy-store/*.ts'],
    runner: 'jest',
    tests: [
      'test/unit/tenancy-store/tenancy-items.test.ts',
      'test/unit/tenancy-store/dynamodb-tenancy-store.test.ts',
      'test/unit/tenancy-store/dynamodb-tenancy-listing.test.ts',
    ],
  },
  {
    name: 'otlp-decoder',
    title: 'the OTLP protobuf decoder',
    mutate: ['lambda/ingest/otlp/protobuf/*.ts'],
    runner: 'jest',
    // The focused tests; the sweeps (decode-export-request.sweeps.test.ts: 4,000 fuzzed bodies, every short UTF-8
    // string, a million containers) and the route's hostile-payload tests take seconds each, which a run would
    // repeat for each of ~900 mutants.
    tests: [
      'test/unit/ingest/otlp/protobuf/wire-reader.test.ts',
      'test/unit/ingest/otlp/protobuf/decode-export-request.test.ts',
      'test/unit/ingest/otlp/protobuf/decode-export-request.edges.test.ts',
      'test/unit/ingest/otlp/protobuf/encode-export-response.test.ts',
    ],
  },
  {
    name: 'landing-keys',
    title: 'landing keys and dedupe',
    mutate: ['lambda/lake/keys/raw-keys.ts', 'lambda/landing/steps/*.ts', 'lambda/landing/land-records.ts'],
    runner: 'jest',
    tests: [
      'test/unit/landing/land-records.test.ts',
      'test/unit/landing/land-records.exactly-once.test.ts',
      'test/unit/landing/span-order.test.ts',
      'test/unit/landing/landable-trace.test.ts',
      'test/unit/landing/landing-steps.test.ts',
    ],
  },
  {
    name: 'compaction-manifest',
    title: 'the compaction manifest and switch',
    // The switch itself is compactSlice (one PUT of the manifest), the steps after it (finishSwitch, also what a retry
    // finishes from the manifest's erasure record) and the deletion of what it left unreferenced.
    mutate: ['lambda/lake/manifest.ts', 'lambda/lake/keys/compacted-keys.ts', 'lambda/lake/lifecycle/compact-slice.ts:361-450', 'lambda/lake/lifecycle/compact-slice.ts:484-501', 'lambda/lake/lifecycle/compact-slice.ts:553-562'],
    runner: 'jest',
    // The focused tests of the manifest, the keys and the switch (tiny hours, ~0.1 s a case). The tests that run the
    // switch on whole hours (compact-slice, erasure/compact-and-erase, plan-compaction, compact-queued-slices) guard
    // the rewrite, the erasure flow, the planner and the worker, and stay in npm test: a mutant that survives runs
    // every test that covers it (a killed one stops at its first failure), which cost ~10 s for each of
    // compactSlice's surviving mutants.
    tests: ['test/unit/lake/manifest.test.ts', 'test/unit/lake/slice-switch.test.ts'],
  },
  {
    name: 'kinesis-publish',
    title: 'the Kinesis publisher',
    mutate: ['lambda/ingest/adapters/publish/kinesis-trace-sink.ts'],
    runner: 'jest',
    // The sink's own tests over a mocked client, and the publish step over the real sink (what a refusal leaves to
    // clean up). The whole handler's Kinesis faults (test/unit/faults/kinesis.test.ts) stay in npm test.
    tests: [
      'test/unit/ingest/adapters/publish/kinesis-trace-sink.contract.test.ts',
      'test/unit/ingest/adapters/publish/kinesis-trace-sink.test.ts',
      'test/unit/ingest/core/publish/publish-traces.test.ts',
    ],
  },
  {
    name: 'lake-erase',
    title: 'erasure: finding and erasing a request\'s traces',
    // The lake's side of an erasure (the matched traces, their raw and overflow objects, the hour index) and the
    // requests above it (lambda/erasure/: records, matching, finding hours, planning, the status, the secret).
    mutate: [
      'lambda/lake/lifecycle/matched-traces.ts',
      'lambda/lake/lifecycle/hour-index.ts',
      'lambda/lake/lifecycle/seen-ids.ts',
      'lambda/lake/keys/overflow-keys.ts',
      'lambda/lake/keys/erasure-keys.ts',
      'lambda/erasure/*.ts',
    ],
    runner: 'jest',
    // The focused tests (a few one-span traces, placeholder objects, mocked DynamoDB, a temp dir). The whole-hour
    // erasure suites (erasure/compact-and-erase, erasure/deployed-erasure) run the same code through compaction and
    // stay in npm test.
    tests: [
      'test/unit/erasure/erasure-record.test.ts',
      'test/unit/erasure/stored-erasures.test.ts',
      'test/unit/lake/matched-traces.test.ts',
      'test/unit/erasure/dynamodb-erasure-secret.test.ts',
      'test/unit/erasure/file-erasure-secret.test.ts',
      'test/unit/lake/keys.test.ts',
    ],
  },
  {
    name: 'retention',
    title: 'retention: the sweep and an hour\'s expiry',
    mutate: ['lambda/lake/lifecycle/expire-hour.ts', 'lambda/retention/plan-retention.ts', 'lambda/retention/sweep-retention.ts', 'lambda/shared/domain/retention.ts'],
    runner: 'jest',
    // The focused tests on placeholder objects first (the sweep and the expiry list and delete, and read nothing),
    // then the sweep on compacted hours read through the views after every delete (~0.1–0.9 s a case).
    // stored-settings.test.ts: the sweep's skip of an organization whose quota, plan or status the CLI would refuse.
    tests: ['test/unit/lake/expire-hour.test.ts', 'test/unit/retention/plan-retention.test.ts', 'test/unit/shared/retention.test.ts', 'test/unit/retention/sweep-retention.test.ts', 'test/unit/retention/stored-settings.test.ts'],
  },
  {
    name: 'sdk-ts-policy',
    title: "the TypeScript SDK's policy",
    mutate: ['sdk/typescript/src/policy.ts'],
    runner: 'sdk-typescript',
    tests: sdkTests('conformance', 'client'),
  },
  {
    name: 'sdk-ts-delivery',
    title: "the TypeScript SDK's delivery",
    mutate: ['sdk/typescript/src/delivery.ts'],
    runner: 'sdk-typescript',
    tests: sdkTests('delivery', 'conformance', 'client', 'logging'),
  },
  {
    name: 'sdk-ts-spool',
    title: "the TypeScript SDK's spool",
    mutate: ['sdk/typescript/src/spool.ts'],
    runner: 'sdk-typescript',
    // The focused file first (no child process, no wait: a run stops at the first failing file); the conformance
    // tests never reach the spool. spool.test.ts leaves out its child-process tests under mutation.
    tests: sdkTests('spool.files', 'spool.edges', 'spool'),
  },
];
