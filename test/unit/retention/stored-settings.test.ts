import { type AttributeValue, DynamoDBClient, QueryCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { landRecords } from '../../../lambda/landing/land-records.js';
import { listedRetentionBucket } from '../../../lambda/retention/listed-retention-bucket.js';
import { sweepRetention } from '../../../lambda/retention/sweep-retention.js';
import { DynamoDbTenancyListing } from '../../../lambda/tenancy-store/dynamodb-tenancy-listing.js';
import { acceptedSpan, acceptedTrace, inlineRecord, traceContext } from '../../../devkit/builders/landing-builders.js';
import { MemoryBucket } from '../../../devkit/fakes/memory-bucket.js';

const NOW = new Date('2026-11-28T12:30:00.000Z');
const OLD_HOUR = new Date(Date.UTC(2026, 10, 18, 10));
const CURRENT_HOUR = new Date(Date.UTC(2026, 10, 28, 12));

type Item = Record<string, AttributeValue>;
const orgItem = (orgId: string, plan: string, extra: Item = {}): Item => ({
  pk: { S: `ORG#${orgId}` },
  sk: { S: 'ORG' },
  org_id: { S: orgId },
  plan: { S: plan },
  overrides: { M: {} },
  retention_days: { N: '3' },
  plan_status: { S: 'active' },
  billing_status: { S: 'ok' },
  ...extra,
});
const planItem = (name: string, extra: Item = {}): Item => ({ pk: { S: 'PLANS' }, sk: { S: `PLAN#${name}` }, plan_name: { S: name }, retention_days: { N: '3' }, ...extra });

let sequence = 0;
async function land(bucket: MemoryBucket, orgId: string, hourStart: Date): Promise<void> {
  const at = new Date(hourStart.getTime() + 5 * 60 * 1000).toISOString().replace('Z', '000Z');
  await landRecords({ store: bucket }, [inlineRecord(++sequence, acceptedTrace({ timestamp: at, spans: [acceptedSpan({ timestamp: at })] }), traceContext({ org_id: orgId, received_at: hourStart.toISOString() }))]);
}

const dynamodb = mockClient(DynamoDBClient);
beforeEach(() => dynamodb.reset());

/**
 * Quotas, overrides, the plan and the statuses are held to the admin CLI's rules when read, as `retention_days` is
 * (stored-retention.test.ts): an organization whose item, or its plan's, holds a value the CLI would refuse is
 * skipped whole by the sweep, logged and reported, and counted where the invalid retention is.
 */
describe('a stored quota, plan or status the CLI would refuse', () => {
  async function sweepWith(bad: { org?: Item; plan?: Item }) {
    const bucket = new MemoryBucket();
    for (const orgId of ['bad', 'good']) for (const hour of [OLD_HOUR, CURRENT_HOUR]) await land(bucket, orgId, hour);
    const before = bucket.keys('traces/org_id=bad/');
    dynamodb.on(ScanCommand).resolves({ Items: [orgItem('bad', 'odd', bad.org), orgItem('good', 'team')] });
    dynamodb.on(QueryCommand).resolves({ Items: [planItem('odd', bad.plan), planItem('team')] });
    const errors: { message: string; extra: Record<string, unknown> }[] = [];
    const logger = { info: () => undefined, error: (message: string, extra: Record<string, unknown>) => void errors.push({ message, extra }) };
    const swept = await sweepRetention({ store: bucket, bucket: listedRetentionBucket(bucket), tenancy: new DynamoDbTenancyListing(new DynamoDBClient({}), 'tenancy'), now: () => NOW, logger });
    return { bucket, before, swept, errors };
  }

  it.each<[string, { org?: Item; plan?: Item }, 'organization' | 'plan', string, AttributeValue]>([
    ['a negative override', { org: { overrides: { M: { minute: { N: '-1' } } } } }, 'organization', 'overrides.minute', { N: '-1' }],
    ['an override as a string', { org: { overrides: { M: { day: { S: '5' } } } } }, 'organization', 'overrides.day', { S: '5' }],
    ['a plan status outside its values', { org: { plan_status: { S: 'ACTIVE' } } }, 'organization', 'plan_status', { S: 'ACTIVE' }],
    ['a billing status outside its values', { org: { billing_status: { S: 'late' } } }, 'organization', 'billing_status', { S: 'late' }],
    ["the plan's fractional quota", { plan: { quota_hour: { N: '2.5' } } }, 'plan', 'quota_hour', { N: '2.5' }],
    ["the plan's quota as a string", { plan: { quota_month: { S: '9' } } }, 'plan', 'quota_month', { S: '9' }],
  ])('%s: sweeps nothing of the organization, logs and reports it, and sweeps the others', async (_name, bad, item, attribute, stored) => {
    const { bucket, before, swept, errors } = await sweepWith(bad);
    expect(before).toHaveLength(2);
    expect(bucket.keys('traces/org_id=bad/')).toEqual(before);
    expect(swept.organizations.map((org) => org.org_id)).toEqual(['good']);
    expect(bucket.keys('traces/org_id=good/')).toEqual([expect.stringContaining('org_id=good/dt=2026-11-28/hour=12/')]);
    const skipped = { org_id: 'bad', plan: 'odd', item, attribute, stored: JSON.stringify(stored) };
    expect(swept.skipped).toEqual([skipped]);
    expect(errors).toEqual([{ message: 'Retention: a stored setting the admin CLI would refuse; nothing of the organization is deleted until it is fixed', extra: skipped }]);
  });

  it('sweeps an organization whose settings are all as the CLI writes them', async () => {
    const { bucket, swept, errors } = await sweepWith({ org: { overrides: { M: { minute: { N: '0' }, hour: { NULL: true } } } }, plan: { quota_day: { N: '10' } } });
    expect(swept.organizations.map((org) => org.org_id)).toEqual(['bad', 'good']);
    expect(bucket.keys('traces/org_id=bad/')).toHaveLength(1);
    expect(swept.skipped).toEqual([]);
    expect(errors).toEqual([]);
  });
});
