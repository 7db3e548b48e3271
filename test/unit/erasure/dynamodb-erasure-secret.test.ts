import { ConditionalCheckFailedException, DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import { DynamoDbErasureSecret } from '../../../lambda/erasure/dynamodb-erasure-secret.js';

const dynamodb = mockClient(DynamoDBClient);
beforeEach(() => dynamodb.reset());

const TABLE = 'tenancy';
const KEY = { pk: { S: 'SECRETS' }, sk: { S: 'ERASURE_HMAC' } };
const STORED = new Uint8Array(32).fill(7);
const GENERATED = new Uint8Array(32).fill(1);
const secretOf = () => new DynamoDbErasureSecret(new DynamoDBClient({}), TABLE, () => GENERATED);
const conditionFailed = () => new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} });

describe('DynamoDbErasureSecret', () => {
  it('reads the stored secret strongly consistent, once for the container\'s life, and writes nothing', async () => {
    dynamodb.on(GetItemCommand).resolves({ Item: { ...KEY, secret: { B: STORED } } });
    const secret = secretOf();
    expect(await secret.get()).toEqual(STORED);
    expect(await secret.get()).toEqual(STORED);
    expect(dynamodb).toHaveReceivedCommandTimes(GetItemCommand, 1);
    expect(dynamodb).toHaveReceivedCommandWith(GetItemCommand, { TableName: TABLE, Key: KEY, ConsistentRead: true });
    expect(dynamodb).not.toHaveReceivedCommand(PutItemCommand);
  });

  it('writes a generated secret only where none is, then reads back what is stored', async () => {
    dynamodb.on(GetItemCommand).resolvesOnce({}).resolves({ Item: { ...KEY, secret: { B: GENERATED } } });
    expect(await secretOf().get()).toEqual(GENERATED);
    expect(dynamodb).toHaveReceivedCommandWith(PutItemCommand, { TableName: TABLE, Item: { ...KEY, secret: { B: GENERATED } }, ConditionExpression: 'attribute_not_exists(pk)' });
    expect(dynamodb).toHaveReceivedCommandTimes(GetItemCommand, 2);
  });

  it.each([
    ['the SDK\'s exception', conditionFailed],
    // An exception of another realm (a bundled SDK copy) is known by its name alone.
    ['an error of that name only', () => Object.assign(new Error('The conditional request failed'), { name: 'ConditionalCheckFailedException' })],
  ])('takes the winner\'s secret when its write loses the race (%s)', async (_, lost) => {
    dynamodb.on(GetItemCommand).resolvesOnce({ Item: { ...KEY } }).resolves({ Item: { ...KEY, secret: { B: STORED } } });
    dynamodb.on(PutItemCommand).rejects(lost());
    expect(await secretOf().get()).toEqual(STORED);
  });

  it('fails on any other error, and tries again on the next call', async () => {
    dynamodb.on(GetItemCommand).resolves({});
    dynamodb.on(PutItemCommand).rejectsOnce(Object.assign(new Error('throttled'), { name: 'ProvisionedThroughputExceededException' })).resolves({});
    const secret = secretOf();
    await expect(secret.get()).rejects.toThrow('throttled');
    await expect(secret.get()).rejects.toThrow('the erasure secret could not be read back after it was written');
    expect(dynamodb).toHaveReceivedCommandTimes(PutItemCommand, 2);
    dynamodb.on(GetItemCommand).resolves({ Item: { ...KEY, secret: { B: STORED } } });
    expect(await secret.get()).toEqual(STORED);
  });

  it('generates 32 random bytes by default', async () => {
    dynamodb.on(GetItemCommand).resolvesOnce({}).resolves({ Item: { ...KEY, secret: { B: STORED } } });
    await new DynamoDbErasureSecret(new DynamoDBClient({}), TABLE).get();
    const written = dynamodb.commandCalls(PutItemCommand)[0]!.args[0].input.Item!.secret!.B!;
    expect(written).toHaveLength(32);
    expect(written).not.toEqual(new Uint8Array(32));
  });
});
