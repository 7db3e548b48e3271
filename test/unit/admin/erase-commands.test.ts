import { AdminCommandError, type TenancyAdminStore } from '../../../scripts/admin/commands.js';
import { createErasure, listErasures, showErasure } from '../../../scripts/admin/erase-commands.js';
import { parseAdminArgs, runAdminCommand, usageFor } from '../../../scripts/admin/run-command.js';
import { compactAndErase } from '../../../lambda/compaction/compact-and-erase.js';
import { newRequest } from '../../../lambda/erasure/erasure-record.js';
import { StoredErasures, erasureStatus } from '../../../lambda/erasure/stored-erasures.js';
import { landRecords } from '../../../lambda/landing/land-records.js';
import type { Organization } from '../../../lambda/shared/domain/tenancy.js';
import { acceptedSpan, acceptedTrace, inlineRecord, traceContext } from '../../../devkit/builders/landing-builders.js';
import { MemoryBucket } from '../../../devkit/fakes/memory-bucket.js';
import { visible } from '../compaction/bucket-views.js';

const NOW = new Date('2026-11-28T12:00:00.000Z');
const ACME: Organization = { orgId: 'acme', plan: 'default', planStatus: 'active', billingStatus: 'ok', overrides: {}, createdAt: NOW.toISOString(), updatedAt: NOW.toISOString() };

function deps() {
  const bucket = new MemoryBucket();
  const store = { getOrganization: async (orgId: string) => (orgId === 'acme' ? ACME : undefined) } as unknown as TenancyAdminStore;
  const erasures = new StoredErasures(bucket, { get: () => Promise.reject(new Error('no secret here')) });
  return { bucket, deps: { store, erasures, now: () => NOW } };
}

describe('admin erase', () => {
  it('records a request in the data bucket and prints its id and status; status and list read it back', async () => {
    const { bucket, deps: d } = deps();
    const parsed = parseAdminArgs(['erase', 'create', '--org', 'acme', '--user-id', 'alice@example.com', '--user-id', 'bob', '--session-id', 'conv-1']);
    const created = (await runAdminCommand(d, parsed)) as { erasure_id: string; status: string };
    expect(created).toEqual({ erasure_id: expect.stringMatching(/^er_[0-9a-f]{32}$/), status: 'pending', org_id: 'acme', requested_at: NOW.toISOString() });
    expect(bucket.keys('erasures/requests/')).toEqual([`erasures/requests/org_id=acme/${created.erasure_id}.json`]);
    expect(await showErasure(d, created.erasure_id)).toMatchObject({
      status: 'pending',
      hours_found: null,
      hours_done: 0,
      rows_removed: 0,
      bytes_rewritten: 0,
      selector: { user_ids: ['alice@example.com', 'bob'], session_ids: ['conv-1'], trace_ids: [] },
    });
    expect((await listErasures(d, 'acme')).erasures.map((erasure) => erasure.erasure_id)).toEqual([created.erasure_id]);
  });

  it('refuses a request without an id to erase, an empty id, or an unknown organization, writing nothing', async () => {
    const { bucket, deps: d } = deps();
    await expect(createErasure(d, 'acme', { user_ids: [], session_ids: [], trace_ids: [] })).rejects.toThrow(new AdminCommandError("'erase create' needs --user-id, --session-id or --trace-id (each may be repeated)"));
    await expect(createErasure(d, 'acme', { user_ids: [''], session_ids: [], trace_ids: [] })).rejects.toThrow('an id to erase must not be empty');
    await expect(createErasure(d, 'nobody', { user_ids: ['alice'], session_ids: [], trace_ids: [] })).rejects.toThrow(AdminCommandError);
    await expect(showErasure(d, 'er_nope')).rejects.toThrow("'er_nope' is not an erasure id");
    await expect(showErasure(d, `er_${'0'.repeat(32)}`)).rejects.toThrow(`no erasure er_${'0'.repeat(32)}`);
    expect(bucket.keys()).toEqual([]);
  });

  it('takes only the options each erase command has', () => {
    expect(() => parseAdminArgs(['erase', 'status'])).toThrow("'erase status' needs --erasure-id");
    expect(() => parseAdminArgs(['erase', 'list', '--org', 'acme', '--user-id', 'x'])).toThrow("option --user-id does not apply to 'erase list'");
    expect(parseAdminArgs(['erase', 'create', '--org', 'acme', '--trace-id', 't1', '--trace-id', 't2']).options['trace-id']).toEqual(['t1', 't2']);
  });
});

describe('admin erase --trace-id', () => {
  // As stored: the JSON route lower-cases the UUID it accepts; the OTLP route writes the 32 hex digits of the OTel
  // trace id in 8-4-4-4-12 form (docs/api.md: 5b8efff798038103d269b633813fc60c → 5b8efff7-9803-8103-d269-b633813fc60c).
  const JSON_ROUTE_ID = '0639ad5e-ce3c-4e4d-9a34-1efb185b9d8b';
  const OTLP_ROUTE_ID = '5b8efff7-9803-8103-d269-b633813fc60c';

  async function lakeWith(ids: string[]) {
    const { bucket, deps: d } = deps();
    const secret = { get: async () => Buffer.alloc(32, 3) };
    const erasures = new StoredErasures(bucket, secret);
    const at = '2026-11-27T10:10:00.000001Z';
    await landRecords({ store: bucket }, [...ids, 'ffffffff-0000-4000-8000-000000000001'].map((trace_id, n) => inlineRecord(n + 1, acceptedTrace({ trace_id, timestamp: at, spans: [acceptedSpan({ timestamp: at })] }), traceContext({ org_id: 'acme', received_at: '2026-11-27T10:10:01.000000Z' }))));
    return { bucket, erasures, secret, d: { ...d, erasures } };
  }

  it.each([
    ['an upper-case UUID', '0639AD5E-CE3C-4E4D-9A34-1EFB185B9D8B', JSON_ROUTE_ID],
    ['a 32-hex OpenTelemetry id', '5b8efff798038103d269b633813fc60c', OTLP_ROUTE_ID],
    ['an upper-case 32-hex OpenTelemetry id', '5B8EFFF798038103D269B633813FC60C', OTLP_ROUTE_ID],
  ])('takes %s in the form it is stored, and erases that trace', async (_name, given, stored) => {
    const { bucket, erasures, secret, d } = await lakeWith([JSON_ROUTE_ID, OTLP_ROUTE_ID]);
    const created = await createErasure(d, 'acme', { user_ids: [], session_ids: [], trace_ids: [given] });
    const pending = await showErasure(d, created.erasure_id);
    await compactAndErase({ store: bucket, now: () => NOW, erasures }, secret, { includeOpenHours: true });
    // Taken as given, the request was done with 0 rows removed and the trace stayed.
    expect(await erasureStatus(erasures, (await erasures.request('acme', created.erasure_id))!)).toMatchObject({ status: 'done', rows_removed: 2 });
    expect((await visible(bucket, 'traces')).map((row) => row.trace_id).sort()).toEqual([JSON_ROUTE_ID, OTLP_ROUTE_ID, 'ffffffff-0000-4000-8000-000000000001'].filter((id) => id !== stored));
    expect(pending.selector?.trace_ids).toEqual([stored]);
  });

  it('names one trace once, whatever forms it is given in', async () => {
    const request = newRequest('acme', { user_ids: [], session_ids: [], trace_ids: [JSON_ROUTE_ID, JSON_ROUTE_ID.toUpperCase(), JSON_ROUTE_ID.replaceAll('-', '')] }, NOW);
    expect(request.trace_ids).toEqual([JSON_ROUTE_ID]);
  });

  it.each(['not-a-uuid', '0639ad5e-ce3c-4e4d-9a34-1efb185b9d8', '0639ad5ece3c4e4d9a341efb185b9d8b0', '{0639ad5e-ce3c-4e4d-9a34-1efb185b9d8b}', ' 0639ad5e-ce3c-4e4d-9a34-1efb185b9d8b', 'g639ad5e-ce3c-4e4d-9a34-1efb185b9d8b'])(
    'refuses %j, which can never match, naming the forms to use and writing nothing',
    async (given) => {
      const { bucket, deps: d } = deps();
      const refused = createErasure(d, 'acme', { user_ids: ['alice'], session_ids: [], trace_ids: [given] });
      await expect(refused).rejects.toBeInstanceOf(AdminCommandError);
      await expect(refused).rejects.toThrow(`--trace-id '${given}' is not a trace id: give a UUID (0639ad5e-ce3c-4e4d-9a34-1efb185b9d8b) or the 32 hex digits of an OpenTelemetry trace id (0639ad5ece3c4e4d9a341efb185b9d8b), in either case`);
      expect(bucket.keys()).toEqual([]);
    },
  );

  it('says in its --help which forms a trace id takes, and that user and session ids match exactly', () => {
    const help = usageFor(['erase', 'create']);
    expect(help).toContain('A trace id is a UUID or 32 hex digits (OpenTelemetry), in either case');
    expect(help).toContain('User and session ids match exactly as sent: case and Unicode form included');
  });
});
