import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';

/** A Lambda `Context` for a local invocation with the deployed function's timeout. */
export function lambdaContext(functionName: string, timeoutMs: number, region: string): Context {
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
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: fail,
    fail,
    succeed: fail,
  };
}
