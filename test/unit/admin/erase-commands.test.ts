import { AdminCommandError, type TenancyAdminStore } from '../../../scripts/admin/commands.js';
import { createErasure, listErasures, showErasure } from '../../../scripts/admin/erase-commands.js';
import { parseAdminArgs, runAdminCommand } from '../../../scripts/admin/run-command.js';
import { StoredErasures } from '../../../lambda/compaction/erasure/stored-erasures.js';
import type { Organization } from '../../../lambda/shared/domain/tenancy.js';
import { MemoryBucket } from '../../../devkit/fakes/memory-bucket.js';

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
