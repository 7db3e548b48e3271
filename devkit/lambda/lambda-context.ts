import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';

export interface LambdaContextOptions {
  functionName?: string;
  /** The function's timeout: `getRemainingTimeInMillis` counts down from it. */
  timeoutMs?: number;
  region?: string;
  /** The remaining time stays at `timeoutMs`: for tests and benchmarks that are not about the deadline. */
  frozen?: boolean;
}

/**
 * The Lambda `Context` of one invocation, for the local stack, the bench and the tests. Make one per
 * invocation: the deadline starts when it is made (unless `frozen`).
 */
export function lambdaContext(options: LambdaContextOptions = {}): Context {
  const { functionName = 'trace-ingest', timeoutMs = 30_000, region = 'us-east-1' } = options;
  const deadline = Date.now() + timeoutMs;
  const fail = () => {
    throw new Error('the legacy done/succeed/fail callbacks are not supported locally');
  };
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${region}:000000000000:function:${functionName}`,
    memoryLimitInMB: '1024',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: options.frozen ? () => timeoutMs : () => Math.max(0, deadline - Date.now()),
    done: fail,
    fail,
    succeed: fail,
  };
}
