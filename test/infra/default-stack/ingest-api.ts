import { Match } from 'aws-cdk-lib/assertions';
import { MAX_DECODED_BODY_BYTES } from '../../../lambda/shared/request-limits.js';
import { DEFAULT_CONFIG } from '../../../lib/config.js';
import { defaultStack } from '../support/synth-stack.js';

describe('IngestApi', () => {
  const { stack, template } = defaultStack();
  const apiId = stack.resolve(stack.ingest.api.restApiId) as unknown;
  const handlerId = stack.getLogicalId(stack.ingest.handler.node.defaultChild as never);

  describe('every body reaches the function base64-encoded, the shape MAX_DECODED_BODY_BYTES is derived for', () => {
    it('treats every request body as binary, whatever its Content-Type, so its size in the event is 4/3 of its decoded size', () => {
      template.hasResourceProperties('AWS::ApiGateway::RestApi', { BinaryMediaTypes: ['*/*'] });
    });

    it('leaves response compression off (API Gateway inflates gzip requests either way, and the function reads both)', () => {
      const apis = template.findResources('AWS::ApiGateway::RestApi');
      expect(Object.keys(apis)).toHaveLength(1);
      for (const api of Object.values(apis)) {
        expect((api as { Properties: Record<string, unknown> }).Properties).not.toHaveProperty('MinimumCompressionSize');
      }
    });

    it('proxies POST /v1/traces/ingest to the ingest function without content conversion', () => {
      template.hasResourceProperties('AWS::ApiGateway::Resource', { PathPart: 'ingest' });
      template.hasResourceProperties('AWS::ApiGateway::Method', {
        HttpMethod: 'POST',
        RestApiId: apiId,
        AuthorizationType: 'NONE',
        Integration: {
          Type: 'AWS_PROXY',
          IntegrationHttpMethod: 'POST',
          ContentHandling: Match.absent(),
          Uri: Match.objectLike({ 'Fn::Join': Match.arrayWith([Match.arrayWith([Match.objectLike({ 'Fn::GetAtt': [handlerId, 'Arn'] })])]) }),
        },
      });
      template.resourceCountIs('AWS::ApiGateway::Method', 2);
    });

    it('proxies POST /otel/v1/traces (OTLP/HTTP) to the same function, leaving a missing key to the function', () => {
      template.hasResourceProperties('AWS::ApiGateway::Resource', { PathPart: 'otel' });
      template.hasResourceProperties('AWS::ApiGateway::Method', {
        HttpMethod: 'POST',
        OperationName: 'ExportTraces',
        RequestParameters: Match.absent(),
        Integration: {
          Type: 'AWS_PROXY',
          ContentHandling: Match.absent(),
          Uri: Match.objectLike({ 'Fn::Join': Match.arrayWith([Match.arrayWith([Match.objectLike({ 'Fn::GetAtt': [handlerId, 'Arn'] })])]) }),
        },
      });
    });
  });

  it('rejects a request without X-API-Key at the gateway, answering 401 invalid_api_key', () => {
    template.hasResourceProperties('AWS::ApiGateway::Method', {
      HttpMethod: 'POST',
      RequestParameters: { 'method.request.header.X-API-Key': true },
      RequestValidatorId: Match.anyValue(),
    });
    template.hasResourceProperties('AWS::ApiGateway::RequestValidator', { ValidateRequestParameters: true, ValidateRequestBody: false });
    template.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
      ResponseType: 'BAD_REQUEST_PARAMETERS',
      StatusCode: '401',
      ResponseTemplates: { 'application/json': Match.stringLikeRegexp('"code":"invalid_api_key"') },
    });
  });

  it('creates API Gateway\'s execution log group in the stack, with the retention, deleted with it, before the stage can log', () => {
    const logGroupId = stack.getLogicalId(stack.ingest.executionLogGroup.node.defaultChild as never);
    const resources = template.toJSON().Resources as Record<string, { Type: string; Properties: Record<string, unknown>; DeletionPolicy?: string; DependsOn?: string[] }>;
    const group = resources[logGroupId];
    expect(group?.Properties.LogGroupName).toEqual({ 'Fn::Join': ['', ['API-Gateway-Execution-Logs_', { Ref: stack.getLogicalId(stack.ingest.api.node.defaultChild as never) }, `/${DEFAULT_CONFIG.stageName}`]] });
    expect(group?.Properties.RetentionInDays).toBe(DEFAULT_CONFIG.logRetention);
    expect(group?.DeletionPolicy).toBe('Delete');
    const stageId = stack.getLogicalId(stack.ingest.api.deploymentStage.node.defaultChild as never);
    expect(resources[stageId]?.DependsOn).toContain(logGroupId);
  });

  describe('answers the platform errors in JSON', () => {
    const responses = template.findResources('AWS::ApiGateway::GatewayResponse');
    const byType = new Map(
      Object.values(responses).map((resource) => {
        const properties = (resource as { Properties: GatewayResponseProperties }).Properties;
        return [properties.ResponseType, properties];
      }),
    );

    it.each([
      ['MISSING_AUTHENTICATION_TOKEN', '404', 'not_found'],
      ['RESOURCE_NOT_FOUND', '404', 'not_found'],
      ['BAD_REQUEST_PARAMETERS', '401', 'invalid_api_key'],
      ['REQUEST_TOO_LARGE', '413', 'payload_too_large'],
      ['UNSUPPORTED_MEDIA_TYPE', '415', 'unsupported_content_encoding'],
      ['THROTTLED', '429', 'rate_limited'],
      ['API_CONFIGURATION_ERROR', '500', 'request_not_delivered'],
      ['INTEGRATION_TIMEOUT', '504', 'gateway_timeout'],
      ['DEFAULT_4XX', undefined, 'bad_request'],
      ['DEFAULT_5XX', undefined, 'unavailable'],
    ])('%s answers %s with a JSON body whose code is %s, never cached', (type, status, code) => {
      const response = byType.get(type);
      expect(response).toBeDefined();
      expect(response?.StatusCode).toBe(status);
      expect(response?.ResponseParameters?.['gatewayresponse.header.Content-Type']).toBe("'application/json'");
      expect(response?.ResponseParameters?.['gatewayresponse.header.Cache-Control']).toBe("'no-store'");
      const body = response?.ResponseTemplates?.['application/json'] ?? '';
      expect(body).toContain(`"code":"${code}"`);
      expect(body).toContain('"detail":');
      expect(body).toContain('$context.requestId');
    });

    it.each(['REQUEST_TOO_LARGE', 'API_CONFIGURATION_ERROR'])('%s, a refusal before the function runs, says to split and never to retry', (type) => {
      const response = byType.get(type);
      expect(response?.ResponseParameters?.['gatewayresponse.header.Retry-After']).toBeUndefined();
      expect(response?.ResponseTemplates?.['application/json']).toMatch(/split the batch.*cannot succeed/);
      expect(response?.ResponseTemplates?.['application/json']).toContain(String(MAX_DECODED_BODY_BYTES));
    });

    it('unknown routes answer 404, not the default 403 "Missing Authentication Token"', () => {
      expect(byType.get('MISSING_AUTHENTICATION_TOKEN')?.StatusCode).toBe('404');
    });

    it('tells throttled and failing clients when to retry', () => {
      expect(byType.get('THROTTLED')?.ResponseParameters?.['gatewayresponse.header.Retry-After']).toBe("'1'");
      expect(byType.get('DEFAULT_5XX')?.ResponseParameters?.['gatewayresponse.header.Retry-After']).toMatch(/^'\d+'$/);
      expect(byType.get('INTEGRATION_TIMEOUT')?.ResponseParameters?.['gatewayresponse.header.Retry-After']).toMatch(/^'\d+'$/);
    });

    it('renders the 4xx default with the escaped error message, which stays valid JSON', () => {
      const template4xx = byType.get('DEFAULT_4XX')?.ResponseTemplates?.['application/json'] ?? '';
      const rendered = template4xx.replace('$context.error.messageString', JSON.stringify('Unsupported "Media" Type')).replace('$context.requestId', 'r-1');
      expect(JSON.parse(rendered)).toEqual({ detail: 'Unsupported "Media" Type', code: 'bad_request', request_id: 'r-1' });
    });
  });

  it('throttles the stage and writes JSON access logs and error execution logs', () => {
    template.hasResourceProperties('AWS::ApiGateway::Stage', {
      StageName: DEFAULT_CONFIG.stageName,
      AccessLogSetting: { DestinationArn: Match.anyValue(), Format: Match.stringLikeRegexp('"status":"\\$context.status"') },
      MethodSettings: [
        Match.objectLike({
          HttpMethod: '*',
          ResourcePath: '/*',
          ThrottlingRateLimit: DEFAULT_CONFIG.throttlingRateLimit,
          ThrottlingBurstLimit: DEFAULT_CONFIG.throttlingBurstLimit,
          LoggingLevel: 'ERROR',
          DataTraceEnabled: false,
          MetricsEnabled: true,
        }),
      ],
    });
  });

  it('never logs the API key header or the body', () => {
    const stage = Object.values(template.findResources('AWS::ApiGateway::Stage'))[0] as { Properties: { AccessLogSetting: { Format: string } } };
    expect(stage.Properties.AccessLogSetting.Format.toLowerCase()).not.toMatch(/x-api-key|\$input|requestoverride/);
  });

  it('counts 429 answers from the access log', () => {
    template.hasResourceProperties('AWS::Logs::MetricFilter', {
      FilterPattern: '{ $.status = "429" }',
      MetricTransformations: [Match.objectLike({ MetricNamespace: 'TraceIngest', MetricName: 'Responses429', MetricValue: '1' })],
    });
  });

  it('lets only API Gateway of this API invoke the function, on its two routes only', () => {
    const permissions = template.findResources('AWS::Lambda::Permission', { Properties: { FunctionName: { 'Fn::GetAtt': [handlerId, 'Arn'] } } });
    expect(Object.values(permissions)).toHaveLength(2);
    for (const route of ['/POST/v1/traces/ingest', '/POST/otel/v1/traces']) {
      template.hasResourceProperties('AWS::Lambda::Permission', {
        Action: 'lambda:InvokeFunction',
        Principal: 'apigateway.amazonaws.com',
        SourceArn: Match.objectLike({ 'Fn::Join': Match.arrayWith([Match.arrayWith([route])]) }),
      });
    }
  });

  it('exports the outputs the admin CLI reads', () => {
    for (const name of ['ApiUrl', 'TenancyTableName', 'RateTableName', 'TraceStreamName', 'DataBucketName']) {
      template.hasOutput(name, { Value: Match.anyValue() });
    }
  });
});

interface GatewayResponseProperties {
  readonly ResponseType: string;
  readonly StatusCode?: string;
  readonly ResponseParameters?: Record<string, string>;
  readonly ResponseTemplates?: Record<string, string>;
}
