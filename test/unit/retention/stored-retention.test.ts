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
const orgItem = (orgId: string, plan: string, retention?: AttributeValue): Item => ({
  pk: { S: `ORG#${orgId}` },
  sk: { S: 'ORG' },
  org_id: { S: orgId },
  plan: { S: plan },
  overrides: { M: {} },
  ...(retention ? { retention_days: retention } : {}),
  plan_status: { S: 'active' },
  billing_status: { S: 'ok' },
});
const planItem = (name: string, retention?: AttributeValue): Item => ({ pk: { S: 'PLANS' }, sk: { S: `PLAN#${name}` }, plan_name: { S: name }, ...(retention ? { retention_days: retention } : {}) });

let sequence = 0;
async function land(bucket: MemoryBucket, orgId: string, hourStart: Date): Promise<void> {
  const at = new Date(hourStart.getTime() + 5 * 60 * 1000).toISOString().replace('Z', '000Z');
  await landRecords({ store: bucket }, [inlineRecord(++sequence, acceptedTrace({ timestamp: at, spans: [acceptedSpan({ timestamp: at })] }), traceContext({ org_id: orgId, received_at: hourStart.toISOString() }))]);
}

const dynamodb = mockClient(DynamoDBClient);
beforeEach(() => dynamodb.reset());

/**
 * What the admin CLI refuses can still be stored (a console edit, a migration, a future API): the sweep reads the
 * table through the same adapter as deployed, and must never delete anything of an organization whose stored
 * `retention_days`, or its plan's, is not a retention.
 */
describe('a stored retention_days the CLI would refuse', () => {
  async function sweepWith(bad: { org?: AttributeValue; plan?: AttributeValue }) {
    const bucket = new MemoryBucket();
    for (const orgId of ['bad', 'good']) for (const hour of [OLD_HOUR, CURRENT_HOUR]) await land(bucket, orgId, hour);
    const before = bucket.keys('traces/org_id=bad/');
    dynamodb.on(ScanCommand).resolves({ Items: [orgItem('bad', 'odd', bad.org), orgItem('good', 'team')] });
    dynamodb.on(QueryCommand).resolves({ Items: [planItem('odd', bad.plan ?? { N: '3' }), planItem('team', { N: '3' })] });
    const errors: { message: string; extra: Record<string, unknown> }[] = [];
    const logger = { info: () => undefined, error: (message: string, extra: Record<string, unknown>) => void errors.push({ message, extra }) };
    const swept = await sweepRetention({ store: bucket, bucket: listedRetentionBucket(bucket), tenancy: new DynamoDbTenancyListing(new DynamoDBClient({}), 'tenancy'), now: () => NOW, logger });
    return { bucket, before, swept, errors };
  }

  it.each([
    ['0 (every ended hour)', { N: '0' }],
    ['-1 (the current hour too)', { N: '-1' }],
    ['a fraction', { N: '1.5' }],
    ['more than 36,500 days', { N: '36501' }],
    ['absurdly large', { N: '1E+30' }],
    ['not a number', { N: 'NaN' }],
    ['a string', { S: '30' }],
    ['a boolean', { BOOL: true }],
  ])("on the organization's item, %s: sweeps nothing of it, logs and reports it, and sweeps the others", async (_name, stored) => {
    const { bucket, before, swept, errors } = await sweepWith({ org: stored });
    expect(bucket.keys('traces/org_id=bad/')).toEqual(before);
    expect(before).toHaveLength(2);
    expect(swept.organizations.map((org) => org.org_id)).toEqual(['good']);
    // The other organization's old hour went, its current hour stayed.
    expect(bucket.keys('traces/org_id=good/')).toEqual([expect.stringContaining('org_id=good/dt=2026-11-28/hour=12/')]);
    const invalid = { org_id: 'bad', item: 'organization', plan: 'odd', stored_retention_days: JSON.stringify(stored) };
    expect(swept.skipped).toEqual([invalid]);
    expect(errors).toEqual([{ message: expect.stringContaining('not a retention'), extra: invalid }]);
  });

  it.each([
    ['0', { N: '0' }],
    ['-1', { N: '-1' }],
    ['a string', { S: '3' }],
  ])("on the plan's item, %s: sweeps nothing of an organization on that plan, even one with its own retention", async (_name, stored) => {
    for (const own of [undefined, { N: '1' }]) {
      const { bucket, before, swept, errors } = await sweepWith({ plan: stored, ...(own ? { org: own } : {}) });
      expect(bucket.keys('traces/org_id=bad/')).toEqual(before);
      expect(swept.organizations.map((org) => org.org_id)).toEqual(['good']);
      expect(swept.skipped).toEqual([{ org_id: 'bad', item: 'plan', plan: 'odd', stored_retention_days: JSON.stringify(stored) }]);
      expect(errors).toHaveLength(1);
    }
  });

  it.each([
    ['a string of 400 KB (the item limit)', { S: 'x'.repeat(400_000) }],
    ['a binary attribute, which JSON renders byte by byte', { B: new Uint8Array(100_000) }],
  ])('quotes the stored value, %s, cut to 80 characters and its length, in the log and the report', async (_name, stored) => {
    const { swept, errors } = await sweepWith({ org: stored });
    const whole = JSON.stringify(stored);
    const cut = `${whole.slice(0, 80)}… (${whole.length} characters)`;
    expect(swept.skipped).toEqual([expect.objectContaining({ stored_retention_days: cut })]);
    expect(errors).toEqual([{ message: expect.stringContaining('not a retention'), extra: expect.objectContaining({ stored_retention_days: cut }) }]);
  });

  it('still keeps on NULL and follows the plan when absent, as the CLI writes them', async () => {
    const kept = await sweepWith({ org: { NULL: true } });
    expect(kept.bucket.keys('traces/org_id=bad/')).toEqual(kept.before);
    expect(kept.swept).toMatchObject({ kept: 1, skipped: [] });
    const follows = await sweepWith({});
    expect(follows.swept.organizations.map((org) => [org.org_id, org.retention])).toEqual([
      ['bad', { days: 3, source: 'plan' }],
      ['good', { days: 3, source: 'plan' }],
    ]);
    expect(follows.bucket.keys('traces/org_id=bad/')).toHaveLength(1);
    expect(follows.errors).toEqual([]);
  });
});
