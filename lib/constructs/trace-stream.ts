import { Duration } from 'aws-cdk-lib';
import { Stream, StreamEncryption, StreamMode } from 'aws-cdk-lib/aws-kinesis';
import { Construct } from 'constructs';

export interface TraceStreamProps {
  /** Hours records stay readable; must outlast the consumer's max record age plus replay time. */
  readonly retentionHours: number;
}

/** The on-demand, encrypted Kinesis stream carrying accepted traces from ingest to landing. */
export class TraceStream extends Construct {
  public readonly stream: Stream;

  constructor(scope: Construct, id: string, props: TraceStreamProps) {
    super(scope, id);
    this.stream = new Stream(this, 'Stream', {
      streamMode: StreamMode.ON_DEMAND,
      // The AWS-managed key needs no key policy or grants and costs nothing per request.
      encryption: StreamEncryption.MANAGED,
      retentionPeriod: Duration.hours(props.retentionHours),
    });
  }
}
