import { createHash } from 'node:crypto';
import { GetItemCommand, TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import { PutRecordsCommand } from '@aws-sdk/client-kinesis';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { decodeTraceRecord } from '../../../lambda/shared/domain/trace-record.js';
import { createHarness, ddbMock, type Harness, kinesisMock, s3Mock } from '../../support/ingest-harness.js';
import { buildBatch, gatewayEvent } from '../../../devkit/builders/trace-builders.js';

/**
 * No API key secret is stored or logged in plain text. The harness's handler gets a Logger at
 * DEBUG (the module is wrapped so every Logger the harness creates logs everything), its output is
 * captured from stdout/stderr, and every command sent to the mocked DynamoDB, Kinesis and S3
 * clients is searched, for valid, invalid, revoked and repeated keys and every kind of outcome.
 */
jest.mock('@aws-lambda-powertools/logger', () => {
  const actual = jest.requireActual<typeof import('@aws-lambda-powertools/logger')>('@aws-lambda-powertools/logger');
  class DebugLogger extends actual.Logger {
    constructor(options: ConstructorParameters<typeof actual.Logger>[0] = {}) {
      super({ ...options, logLevel: 'DEBUG' });
    }
  }
  return { ...actual, Logger: DebugLogger };
});

let captured: string[] = [];
const capture = (stream: NodeJS.WriteStream) =>
  jest.spyOn(stream, 'write').mockImplementation((chunk: string | Uint8Array) => {
    captured.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
    return true;
  });

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
  captured = [];
  capture(process.stdout);
  capture(process.stderr);
});
afterEach(() => jest.restoreAllMocks());

/** Every form of a secret that must not appear: whole, and the part beyond the display prefix. */
function forms(secret: string): string[] {
  return [secret, secret.slice(12), secret.slice(4, 40)];
}

/** Text of every command input sent to the mocked clients, with Kinesis records decoded. */
function commandText(): string {
  const parts: string[] = [];
  for (const mock of [ddbMock, kinesisMock, s3Mock] as const) {
    for (const call of mock.calls()) parts.push(JSON.stringify(call.args[0].input, (_, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('base64') : v)));
  }
  for (const call of kinesisMock.commandCalls(PutRecordsCommand)) {
    for (const record of call.args[0].input.Records ?? []) parts.push(JSON.stringify(decodeTraceRecord(record.Data as Uint8Array)));
  }
  return parts.join('\n');
}

async function send(apiKey: string | string[] | undefined, payload: string = JSON.stringify(buildBatch(2))): Promise<APIGatewayProxyResult> {
  return h.invoke(gatewayEvent({ apiKey, body: payload }));
}

describe('secrets are never stored or logged in plain text', () => {
  it('logs at DEBUG are captured (the check would see a leak)', async () => {
    await send(h.orgKey);
    const logs = captured.join('');
    expect(logs).toMatch(/"level":"INFO"/);
    expect(logs).toMatch(/Batch ingested/);
  });

  it('no secret appears in logs, responses or any DynamoDB/Kinesis/S3 command, whatever the outcome', async () => {
    const unknownKey = `tik_${'Z'.repeat(43)}`;
    const malformedKey = 'tik_short-but-secret-looking-value-1234567890';
    const responses: APIGatewayProxyResult[] = [];
    responses.push(await send(h.orgKey)); // 200
    responses.push(await send(h.workspaceKey, JSON.stringify(buildBatch(1, { workspace_slug: 'research' })))); // 200
    responses.push(await send(h.workspaceKey, JSON.stringify(buildBatch(1, { workspace_slug: 'support' })))); // 403
    responses.push(await send(h.revokedKey)); // 401
    responses.push(await send(unknownKey)); // 401
    responses.push(await send(malformedKey)); // 401
    responses.push(await send([h.orgKey, h.workspaceKey])); // 401
    responses.push(await send(h.orgKey, '{"traces": [')); // 400
    // Failures after authentication: the error paths log the error objects.
    kinesisMock.on(PutRecordsCommand).rejects(Object.assign(new Error('Rate exceeded'), { name: 'ProvisionedThroughputExceededException', $metadata: {} }));
    responses.push(await send(h.orgKey)); // 503, give-back logged
    ddbMock.on(TransactWriteItemsCommand).rejects(Object.assign(new Error('throttled'), { name: 'ThrottlingException', $metadata: {} }));
    responses.push(await send(h.orgKey)); // 503, give-back failure not reached
    ddbMock.on(GetItemCommand).rejects(Object.assign(new Error('boom'), { name: 'InternalServerError', $metadata: {} }));
    const uncachedKey = `tik_${'Y'.repeat(43)}`;
    responses.push(await send(uncachedKey)); // 503 from the key lookup (not cached yet), logged as unexpected
    expect(responses.map((r) => r.statusCode)).toEqual([200, 200, 403, 401, 401, 401, 401, 400, 503, 503, 503]);

    const logs = captured.join('');
    // The searched logs include the refusal and the unexpected-error paths.
    expect(logs).toMatch(/Request refused/);
    expect(logs).toMatch(/Unexpected error; answered 503/);
    const stored = commandText();
    const answers = responses.map((r) => JSON.stringify(r)).join('\n');
    const tenancyItems = JSON.stringify([...h.items.values()]);
    for (const secret of [h.orgKey, h.workspaceKey, h.revokedKey, unknownKey, malformedKey, uncachedKey]) {
      for (const form of forms(secret)) {
        expect({ form, inLogs: logs.includes(form) }).toEqual({ form, inLogs: false });
        expect({ form, inCommands: stored.includes(form) }).toEqual({ form, inCommands: false });
        expect({ form, inResponses: answers.includes(form) }).toEqual({ form, inResponses: false });
        expect({ form, inTenancyTable: tenancyItems.includes(form) }).toEqual({ form, inTenancyTable: false });
      }
    }
  });

  it('the tenancy table holds each key as its SHA-256 hash and a 12-character display prefix only', () => {
    for (const secret of [h.orgKey, h.workspaceKey, h.revokedKey]) {
      const hash = createHash('sha256').update(secret).digest('hex');
      const item = h.items.get(`KEY#${hash}|KEY`);
      expect(item).toBeDefined();
      expect(item?.display_prefix?.S).toBe(secret.slice(0, 12));
      const values = JSON.stringify(item);
      expect(values).not.toContain(secret.slice(12));
    }
  });

  it('the key lookup reads DynamoDB by the hash: no command carries the secret', async () => {
    await send(h.orgKey);
    const keys = ddbMock.commandCalls(GetItemCommand).map((c) => c.args[0].input.Key?.pk?.S);
    expect(keys).toContain(`KEY#${createHash('sha256').update(h.orgKey).digest('hex')}`);
    expect(commandText()).not.toContain(h.orgKey);
  });
});

describe('the records carry the key id, never the key', () => {
  it('context.api_key_id is the key_… id', async () => {
    await send(h.orgKey);
    const [call] = kinesisMock.commandCalls(PutRecordsCommand);
    const record = decodeTraceRecord(call?.args[0].input.Records?.[0]?.Data as Uint8Array);
    expect(record.context.api_key_id).toMatch(/^key_[0-9a-f]{20}$/);
  });
});
