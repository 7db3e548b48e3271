import { Fn, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import {
  AccessLogFormat,
  EndpointType,
  LambdaIntegration,
  LogGroupLogDestination,
  type Method,
  MethodLoggingLevel,
  RequestValidator,
  ResponseType,
  RestApi,
} from 'aws-cdk-lib/aws-apigateway';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IStream } from 'aws-cdk-lib/aws-kinesis';
import { FilterPattern, LogGroup, MetricFilter, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Bucket } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { ENV } from '../../lambda/shared/runtime/env-names.js';
import { INGEST_ROUTE, OTLP_ROUTE, SERVICE_NAMES } from '../../lambda/shared/service-constants.js';
import { tenancyKeys } from '../../lambda/shared/tables.js';
import type { IngestSettings } from '../config.js';
import { BINARY_MEDIA_TYPES, type GatewayAnswer, GATEWAY_ANSWERS, gatewayAnswerHeaders, gatewayAnswerTemplate } from '../gateway-responses.js';
import { acknowledgePrefixWildcards } from './acknowledge.js';
import { HouseFunction } from './house-function.js';
import { KEPT_UNLESS_CREATE_ROLLED_BACK } from './kept-resources.js';


/** One JSON line per request; never the API key or the body. `status` is a string, as the metric filter expects. */
export const ACCESS_LOG_FIELDS = {
  requestId: '$context.requestId',
  ip: '$context.identity.sourceIp',
  userAgent: '$context.identity.userAgent',
  requestTime: '$context.requestTimeEpoch',
  httpMethod: '$context.httpMethod',
  path: '$context.path',
  status: '$context.status',
  responseLength: '$context.responseLength',
  responseLatency: '$context.responseLatency',
  integrationLatency: '$context.integrationLatency',
  integrationStatus: '$context.integration.status',
  errorType: '$context.error.responseType',
  errorMessage: '$context.error.message',
};

/** Path of the JSON route, below the stage. */
export const INGEST_PATH = INGEST_ROUTE.path.split('/').filter((part) => part !== '');
/** Path of the OTLP/HTTP traces route: exporters append `v1/traces` to `{base_url}/otel`. */
export const OTLP_TRACES_PATH = OTLP_ROUTE.path.split('/').filter((part) => part !== '');

/** Name of the access-log metric counting 429 answers (gateway throttling and rate limits). */
export const THROTTLED_METRIC_NAME = 'Responses429';

export interface IngestApiProps {
  readonly projectRoot: string;
  /** Handler file relative to `projectRoot`. */
  readonly entry: string;
  readonly tenancyTable: ITable;
  readonly rateTable: ITable;
  readonly stream: IStream;
  readonly bucket: Bucket;
  /** Key prefix of oversized traces carried by reference. */
  readonly overflowPrefix: string;
  readonly settings: IngestSettings;
  readonly stageName: string;
  /** Whether the stack sets the account's API Gateway CloudWatch role (lib/config.ts `apiGatewayCloudWatchRole`). */
  readonly ownsAccountCloudWatchRole: boolean;
  readonly throttlingRateLimit: number;
  readonly throttlingBurstLimit: number;
  readonly logRetention: RetentionDays;
  readonly metricsNamespace: string;
}

/** The ingest link: the REST API, its single route, and the function behind it with its grants. */
export class IngestApi extends Construct {
  public readonly api: RestApi;
  public readonly handler: HouseFunction;
  public readonly method: Method;
  public readonly accessLogGroup: LogGroup;
  /** API Gateway's execution log group, created by the stack so that it has a retention and goes with it. */
  public readonly executionLogGroup: LogGroup;
  /** URL of `POST /v1/traces/ingest` on the deployed stage. */
  public readonly ingestUrl: string;
  /** `POST /otel/v1/traces`, the OTLP/HTTP route, served by the same function. */
  public readonly otlpMethod: Method;
  /** URL of `POST /otel/v1/traces` on the deployed stage. */
  public readonly otlpTracesUrl: string;

  constructor(scope: Construct, id: string, props: IngestApiProps) {
    super(scope, id);

    this.handler = new HouseFunction(this, 'Handler', {
      projectRoot: props.projectRoot,
      entry: props.entry,
      description: 'POST /v1/traces/ingest and /otel/v1/traces (OTLP): authenticates, validates, rate-limits and publishes trace batches',
      serviceName: SERVICE_NAMES.ingest,
      metricsNamespace: props.metricsNamespace,
      logRetention: props.logRetention,
      memorySize: props.settings.memorySize,
      timeout: props.settings.timeout,
      environment: {
        [ENV.tenancyTable]: props.tenancyTable.tableName,
        [ENV.rateTable]: props.rateTable.tableName,
        [ENV.traceStream]: props.stream.streamName,
        [ENV.dataBucket]: props.bucket.bucketName,
        [ENV.keyCacheSeconds]: String(props.settings.keyCacheSeconds),
      },
    });
    this.grantHandler(props);

    this.accessLogGroup = new LogGroup(this, 'AccessLogs', { retention: props.logRetention, removalPolicy: RemovalPolicy.DESTROY });
    this.api = new RestApi(this, 'Api', {
      restApiName: `${Stack.of(this).stackName}-ingest`,
      description: 'Trace Ingest API',
      endpointTypes: [EndpointType.REGIONAL],
      binaryMediaTypes: [...BINARY_MEDIA_TYPES],
      // The setting is the account's, one per region (https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-apigateway-account.html);
      // the stage's logging needs it set, by this stack or before it (https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-logging.html).
      cloudWatchRole: props.ownsAccountCloudWatchRole,
      // Applies to the AWS::ApiGateway::Account setting too.
      ...(props.ownsAccountCloudWatchRole ? { cloudWatchRoleRemovalPolicy: KEPT_UNLESS_CREATE_ROLLED_BACK } : {}),
      deployOptions: {
        stageName: props.stageName,
        throttlingRateLimit: props.throttlingRateLimit,
        throttlingBurstLimit: props.throttlingBurstLimit,
        metricsEnabled: true,
        loggingLevel: MethodLoggingLevel.ERROR,
        dataTraceEnabled: false,
        accessLogDestination: new LogGroupLogDestination(this.accessLogGroup),
        accessLogFormat: AccessLogFormat.custom(JSON.stringify(ACCESS_LOG_FIELDS)),
      },
    });

    // API Gateway writes execution logs to a group it creates itself, outside the stack and kept forever
    // (https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-logging.html: "API-Gateway-Execution-Logs_{rest-api-id}/{stage_name}").
    // Created here first, with the retention and deleted with the stack; the stage waits for it, so API Gateway finds it.
    this.executionLogGroup = new LogGroup(this, 'ExecutionLogs', {
      logGroupName: Fn.join('', ['API-Gateway-Execution-Logs_', this.api.restApiId, '/', props.stageName]),
      retention: props.logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.api.deploymentStage.node.addDependency(this.executionLogGroup);

    const resource = INGEST_PATH.reduce((parent, part) => parent.addResource(part), this.api.root);
    this.method = resource.addMethod('POST', new LambdaIntegration(this.handler, { proxy: true, allowTestInvoke: false }), {
      operationName: 'IngestTraces',
      // A request without the key never reaches (or bills) the function.
      requestParameters: { 'method.request.header.X-API-Key': true },
      requestValidator: new RequestValidator(this, 'ApiKeyHeaderValidator', {
        restApi: this.api,
        validateRequestParameters: true,
        validateRequestBody: false,
      }),
    });
    this.ingestUrl = this.api.urlForPath(`/${INGEST_PATH.join('/')}`);

    // No header validator here: OTLP exporters read a google.rpc.Status body, which the function
    // writes for a missing key as for every other refusal.
    const otlpResource = OTLP_TRACES_PATH.reduce((parent, part) => parent.addResource(part), this.api.root);
    this.otlpMethod = otlpResource.addMethod('POST', new LambdaIntegration(this.handler, { proxy: true, allowTestInvoke: false }), {
      operationName: 'ExportTraces',
    });
    this.otlpTracesUrl = this.api.urlForPath(`/${OTLP_TRACES_PATH.join('/')}`);

    this.addJsonGatewayResponses();

    new MetricFilter(this, 'Throttled', {
      logGroup: this.accessLogGroup,
      metricNamespace: props.metricsNamespace,
      metricName: THROTTLED_METRIC_NAME,
      filterPattern: FilterPattern.stringValue('$.status', '=', '429'),
      metricValue: '1',
      defaultValue: 0,
    });

    this.acknowledgeFindings(props.ownsAccountCloudWatchRole);
  }

  private grantHandler(props: IngestApiProps): void {
    // The partitions the per-request reads name (DynamoDbTenancyReader): an API key, an organization and its
    // workspaces, the plans; not the erasure secret's (SECRETS) beside them. GetItem always names its partition key,
    // so dynamodb:LeadingKeys holds it (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/specifying-conditions.html).
    const partitions = [tenancyKeys.apiKey('*').pk, tenancyKeys.organization('*').pk, tenancyKeys.plan('*').pk];
    this.handler.addToRolePolicy(
      new PolicyStatement({
        actions: ['dynamodb:GetItem'],
        resources: [props.tenancyTable.tableArn],
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': partitions } },
      }),
    );
    // TransactWriteItems is authorized per contained action; idempotency records use the same table;
    // BatchGetItem reads the window counters for the RateLimit header.
    this.handler.addToRolePolicy(
      new PolicyStatement({
        actions: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:ConditionCheckItem'],
        resources: [props.rateTable.tableArn],
      }),
    );
    this.handler.addToRolePolicy(new PolicyStatement({ actions: ['kinesis:PutRecords', 'kinesis:PutRecord'], resources: [props.stream.streamArn] }));
    // DeleteObject: the objects of traces a failed publish did not put on the stream are deleted again.
    this.handler.addToRolePolicy(
      new PolicyStatement({ actions: ['s3:PutObject', 's3:DeleteObject'], resources: [props.bucket.arnForObjects(`${props.overflowPrefix}*`)] }),
    );
    acknowledgePrefixWildcards(
      this.handler.role ?? this.handler,
      props.bucket,
      [props.overflowPrefix],
      'Oversized traces are written (and, when their publish fails, deleted) under the overflow prefix with keys chosen per request; no other prefix is writable.',
    );
  }

  /** The platform's own answers (unknown route, too large, throttled, …) in the API's JSON error shape, from the table the local gateway answers from. */
  private addJsonGatewayResponses(): void {
    for (const [name, answer] of Object.entries(GATEWAY_ANSWERS) as [string, GatewayAnswer][]) {
      const headers = Object.fromEntries(Object.entries(gatewayAnswerHeaders(answer)).map(([header, value]) => [header, `'${value}'`]));
      this.api.addGatewayResponse(`${name[0]?.toUpperCase()}${name.slice(1)}`, {
        type: ResponseType.of(answer.type),
        ...(answer.status === undefined ? {} : { statusCode: String(answer.status) }),
        templates: { 'application/json': gatewayAnswerTemplate(answer) },
        responseHeaders: headers,
      });
    }
  }

  private acknowledgeFindings(ownsAccountCloudWatchRole: boolean): void {
    const findings: Record<string, string> = {
      'AwsSolutions-APIG4':
        'Callers authenticate with X-API-Key, checked by the ingest function against SHA-256 key hashes in the tenancy table (spec section 5); the gateway rejects requests without the header.',
      'AwsSolutions-COG4': 'The API serves machine clients holding per-organization API keys; there are no Cognito users.',
      'AwsSolutions-APIG2':
        'The gateway validates the required X-API-Key header; every body is passed as binary (JSON or OTLP protobuf, often gzip), which a gateway model cannot validate, so the function validates it (per-trace errors in the 200).',
      'AwsSolutions-APIG3':
        'No WAF by default: bodies are often gzip-compressed, which WAF cannot inspect, and per-organization rate limits plus stage throttling already apply. docs/deploy.md shows how to associate a web ACL.',
    };
    if (ownsAccountCloudWatchRole) {
      findings['AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]'] =
        'The account-level API Gateway logging role needs exactly this AWS-managed policy to write access and execution logs.';
    }
    for (const [id, reason] of Object.entries(findings)) Validations.of(this.api).acknowledge({ id, reason });
  }
}
