import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { Stream, StreamEncryption, StreamMode } from 'aws-cdk-lib/aws-kinesis';
import { Construct } from 'constructs';
import type { StreamCapacity, StreamRemovalPolicy } from '../config.js';
import { KEPT_UNLESS_CREATE_ROLLED_BACK } from './kept-resources.js';

export interface TraceStreamProps {
  /** Hours records stay readable; must outlast the consumer's max record age plus replay time. */
  readonly retentionHours: number;
  readonly capacity: StreamCapacity;
  /** What deleting the stack does with the stream; `destroy` when absent. */
  readonly removalPolicy?: StreamRemovalPolicy;
}

/** The encrypted Kinesis stream (on demand, or provisioned with a fixed shard count) carrying accepted traces from ingest to landing. */
export class TraceStream extends Construct {
  public readonly stream: Stream;

  constructor(scope: Construct, id: string, props: TraceStreamProps) {
    super(scope, id);
    this.stream = new Stream(this, 'Stream', {
      ...(props.capacity.mode === 'provisioned'
        ? { streamMode: StreamMode.PROVISIONED, shardCount: props.capacity.shards }
        : { streamMode: StreamMode.ON_DEMAND }),
      // The AWS-managed key needs no key policy or grants and costs nothing per request.
      encryption: StreamEncryption.MANAGED,
      retentionPeriod: Duration.hours(props.retentionHours),
      // CDK's default is RETAIN: a destroyed stack would leave a stream billing with no reader.
      removalPolicy: props.removalPolicy === 'retain' ? KEPT_UNLESS_CREATE_ROLLED_BACK : RemovalPolicy.DESTROY,
    });
  }
}
