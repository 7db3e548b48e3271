import { type CfnResource, Duration } from 'aws-cdk-lib';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { InvocationType, Trigger } from 'aws-cdk-lib/triggers';
import type { Construct } from 'constructs';

/**
 * How long CloudFormation waits for the trigger's custom resource before it fails the operation; unset, it is
 * 3,600 s (https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-cloudformation-customresource.html,
 * ServiceTimeout). The provider's work is one asynchronous Invoke: its retries of an AccessDenied while IAM propagates
 * (12 × 5 s) and three attempts at `INVOKE_TIMEOUT` fit.
 */
export const FIRST_RUN_SERVICE_TIMEOUT = Duration.minutes(5);

/** The provider's socket timeout per Invoke attempt; an asynchronous Invoke answers 202 as soon as Lambda has queued the event. */
const INVOKE_TIMEOUT = Duration.minutes(1);

/** How long Lambda keeps the queued run before dropping it, as for the function's scheduled runs. */
const MAX_EVENT_AGE = Duration.minutes(15);

export interface FirstRunTriggerProps {
  readonly handler: LambdaFunction;
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
  }
}
