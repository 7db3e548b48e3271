import { Duration, Validations } from 'aws-cdk-lib';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';

export interface FailureQueueProps {
  /** A FIFO queue, for the dead letters of a FIFO queue. */
  readonly fifo?: boolean;
  /** What the queue holds, said to cdk-nag in place of a dead-letter queue of its own. */
  readonly holds: string;
}

/**
 * A queue where failures end up (a dead-letter queue, an on-failure destination): encrypted, TLS only, kept
 * 14 days (SQS's longest) for someone to look at, and with no dead-letter queue of its own.
 */
export function failureQueue(scope: Construct, id: string, props: FailureQueueProps): Queue {
  const queue = new Queue(scope, id, {
    fifo: props.fifo,
    encryption: QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: Duration.days(14),
  });
  Validations.of(queue).acknowledge({ id: 'AwsSolutions-SQS3', reason: `This queue is itself where failures end up: it holds ${props.holds}.` });
  return queue;
}
