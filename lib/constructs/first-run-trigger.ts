import { type CfnResource, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { InvocationType, Trigger } from 'aws-cdk-lib/triggers';
import type { Construct } from 'constructs';

/**
 * How long CloudFormation waits for the trigger's custom resource before it fails the operation; unset, it is
 * 3,600 s (https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-cloudformation-customresource.html,
 * ServiceTimeout). The provider's work is one asynchronous Invoke: its retries of an AccessDenied while IAM propagates
 * (12 × 5 s) and three attempts at `INVOKE_TIMEOUT` fit.
 */
const FIRST_RUN_SERVICE_TIMEOUT = Duration.minutes(5);

/** The provider's socket timeout per Invoke attempt; an asynchronous Invoke answers 202 as soon as Lambda has queued the event. */
const INVOKE_TIMEOUT = Duration.minutes(1);

/** How long Lambda keeps the queued run before dropping it, as for the function's scheduled runs. */
const MAX_EVENT_AGE = Duration.minutes(15);

/**
 * Where aws-cdk-lib 2.276 puts the provider every Trigger of a stack shares: `TriggerProvider.getOrCreateProvider(scope,
 * 'AWSCDK.TriggerCustomResourceProvider')` in triggers/lib/trigger.js, a CustomResourceProviderBase whose function is its
 * child `Handler`. Not public API: `providerLogs` fails the synth if it moves, and test/infra holds the result.
 */
const TRIGGER_PROVIDER_ID = 'AWSCDK.TriggerCustomResourceProviderCustomResourceProvider';

export interface FirstRunTriggerProps {
  readonly handler: LambdaFunction;
  /** Retention of the log group of CDK's trigger provider, which the stack creates. */
  readonly logRetention: RetentionDays;
}

/**
 * Starts a function once, when the trigger is created: with the stack, or by the first update of a stack deployed
 * before it. The invocation is asynchronous, so the deployment never waits on the run: a synchronous run on a busy
 * stack could outlast the provider's socket timeout, which the provider's SDK retries into a second run, while
 * CloudFormation waits for the custom resource. A failed run is not retried and shows in the function's own
 * alarms; the trigger invokes the function's current version, whose asynchronous settings are its own
 * (https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-lambda-eventinvokeconfig.html),
 * so they are set here.
 */
export class FirstRunTrigger extends Trigger {
  constructor(scope: Construct, id: string, props: FirstRunTriggerProps) {
    super(scope, id, {
      handler: props.handler,
      invocationType: InvocationType.EVENT,
      executeOnHandlerChange: false,
      timeout: INVOKE_TIMEOUT,
    });
    // Trigger has no prop for it; its custom resource is the construct's one CloudFormation resource.
    (this.node.findChild('Default').node.defaultChild as CfnResource).addPropertyOverride('ServiceTimeout', FIRST_RUN_SERVICE_TIMEOUT.toSeconds());
    props.handler.currentVersion.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: MAX_EVENT_AGE });
    providerLogs(this, props.logRetention);
  }
}

/**
 * Gives CDK's trigger provider a log group of the stack, once per stack. Its function has no LoggingConfig, so
 * Lambda would write to `/aws/lambda/<name>`, a group it creates outside the stack, kept forever
 * (https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-loggroups.html); the provider's role
 * (AWSLambdaBasicExecutionRole) may write to any group.
 */
function providerLogs(trigger: Trigger, retention: RetentionDays): void {
  const provider = Stack.of(trigger).node.tryFindChild(TRIGGER_PROVIDER_ID);
  const handler = provider?.node.tryFindChild('Handler') as CfnResource | undefined;
  if (provider === undefined || handler?.cfnResourceType !== 'AWS::Lambda::Function') {
    throw new Error(`aws-cdk-lib's trigger provider is no longer at ${TRIGGER_PROVIDER_ID}/Handler: update lib/constructs/first-run-trigger.ts for this aws-cdk-lib`);
  }
  if (provider.node.tryFindChild('Logs') !== undefined) return;
  const logs = new LogGroup(provider, 'Logs', { retention, removalPolicy: RemovalPolicy.DESTROY });
  handler.addPropertyOverride('LoggingConfig', { LogGroup: logs.logGroupName });
}
