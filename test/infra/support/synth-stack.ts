import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { BUNDLING_STACKS } from 'aws-cdk-lib/cx-api';
import { DEFAULT_CONFIG, type TraceIngestConfig } from '../../../lib/config.js';
import { TraceIngestStack, type FunctionEntries } from '../../../lib/trace-ingest-stack.js';

export const PROJECT_ROOT = path.resolve(__dirname, '../../..');

/** The feature flags `cdk synth` uses, so tests see the same template. */
function cdkJsonContext(): Record<string, unknown> {
  const cdkJson = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'cdk.json'), 'utf8')) as { context?: Record<string, unknown> };
  return cdkJson.context ?? {};
}

/**
 * An app with cdk.json's feature flags that bundles no function. CDK bundles only the stacks this
 * context names (the CLI passes the stacks a command selects; unset, it is `["**"]`); with none, a
 * NodejsFunction's code asset is its project directory, hashed by the construct's unique id, and
 * esbuild never runs (https://github.com/aws/aws-cdk/issues/18125). The template is the same apart
 * from the four code assets' `S3Key`s, which test/integration/bundled.test.ts checks against the
 * bundled one.
 */
export function unbundledApp(): App {
  return new App({ context: { ...cdkJsonContext(), [BUNDLING_STACKS]: [] } });
}

export interface SynthOptions {
  readonly config?: TraceIngestConfig;
  readonly entries?: Partial<FunctionEntries>;
  /** Where and under which name: the template names its region, account and stack in ARNs and URLs. */
  readonly stackName?: string;
  readonly env?: { account: string; region: string };
}

export interface SynthesizedStack {
  readonly app: App;
  readonly stack: TraceIngestStack;
  readonly template: Template;
}

/** Builds and synthesizes the stack, without bundling its functions. */
export function synthStack(options: SynthOptions = {}): SynthesizedStack {
  const app = unbundledApp();
  const stack = new TraceIngestStack(app, options.stackName ?? 'trace-ingest-test', {
    env: options.env ?? { account: '123456789012', region: 'eu-west-1' },
    config: options.config ?? DEFAULT_CONFIG,
    projectRoot: PROJECT_ROOT,
    ...(options.entries === undefined ? {} : { entries: options.entries }),
  });
  return { app, stack, template: Template.fromStack(stack) };
}

let defaultStackOnce: SynthesizedStack | undefined;

/**
 * The stack with the default configuration, synthesized once per test file: the suites that read it
 * are modules of test/infra/default-stack.test.ts, so the whole run synthesizes it once.
 */
export function defaultStack(): SynthesizedStack {
  defaultStackOnce ??= synthStack();
  return defaultStackOnce;
}

export interface PolicyStatementSummary {
  readonly actions: string[];
  readonly resources: unknown[];
}

/** Every Allow statement of the policies attached to a role, actions sorted, for exact comparison. */
export function statementsOfRole(template: Template, roleLogicalId: string): PolicyStatementSummary[] {
  const policies = template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleLogicalId }] } });
  return Object.values(policies).flatMap((policy) => {
    const statements = (policy as { Properties: { PolicyDocument: { Statement: RawStatement[] } } }).Properties.PolicyDocument.Statement;
    return statements.map((statement) => {
      expect(statement.Effect).toBe('Allow');
      return {
        actions: [statement.Action].flat().sort(),
        resources: [statement.Resource].flat(),
      };
    });
  });
}

/** Statements and their resources in a stable order, for comparing a role's grants as a set. */
export function sortStatements<T extends PolicyStatementSummary>(statements: T[]): T[] {
  const key = (statement: T) => JSON.stringify(statement);
  return statements
    .map((statement) => ({ ...statement, resources: [...statement.resources].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))) }))
    .sort((a, b) => key(a).localeCompare(key(b)));
}

interface RawStatement {
  readonly Effect: string;
  readonly Action: string | string[];
  readonly Resource: unknown;
}
