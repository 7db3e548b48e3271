import { ingestConfigFromEnv } from '../../../lambda/ingest/compose.js';
import type { TenancyReader } from '../../../lambda/ingest/core/tenancy/ports.js';
import { authenticate } from '../../../lambda/ingest/core/tenancy/identify-caller.js';
import { CachedTenancyReader, type TenancyCacheOptions } from '../../../lambda/ingest/core/tenancy/tenancy-cache.js';
import { type ApiKey, generateApiKeySecret, hashApiKey } from '../../../lambda/shared/domain/tenancy.js';
import { ENV } from '../../../lambda/shared/runtime/env-names.js';

const RESOURCES = { [ENV.tenancyTable]: 't', [ENV.rateTable]: 'r', [ENV.traceStream]: 's', [ENV.dataBucket]: 'b' };
/** The cache settings of the deployed function (KEY_CACHE_SECONDS unset: 30 s) and of the local stack (0). */
const SETTINGS: [string, TenancyCacheOptions][] = [
  ['deployed', cacheOf(RESOURCES)],
  ['local stack', cacheOf({ ...RESOURCES, [ENV.keyCacheSeconds]: '0' })],
];

function cacheOf(env: NodeJS.ProcessEnv): TenancyCacheOptions {
  const { tenancyCache } = ingestConfigFromEnv(env);
  if (!tenancyCache) throw new Error('the ingest function caches tenancy lookups');
  return tenancyCache;
}

describe('CachedTenancyReader: an unknown and a revoked key cost the same', () => {
  const unknown = generateApiKeySecret().secret;
  const revoked = generateApiKeySecret();
  const revokedKey: ApiKey = { keyId: revoked.keyId, orgId: 'org', workspaceSlug: null, status: 'revoked', name: 'old', displayPrefix: revoked.displayPrefix, createdAt: '2026-01-01T00:00:00Z', revokedAt: '2026-01-02T00:00:00Z' };

  it.each(SETTINGS)('reads the store for both at the same moments, %s', async (_, options) => {
    const reads: string[] = [];
    const store: TenancyReader = {
      getApiKeyByHash: async (hash) => (reads.push(hash), hash === hashApiKey(revoked.secret) ? revokedKey : undefined),
      getOrganization: async () => undefined,
      getPlan: async () => undefined,
      workspaceExists: async () => false,
    };
    let now = 0;
    const cached = new CachedTenancyReader(store, options, () => now);
    const storeReadsPerRequest = async (secret: string) => {
      const before = reads.length;
      await expect(authenticate(cached, [secret])).rejects.toThrow('Invalid or missing API key: the key is unknown or revoked');
      return reads.length - before;
    };

    const timeline: { at: number; unknown: number; revoked: number }[] = [];
    for (now = 0; now <= 65_000; now += 500) {
      timeline.push({ at: now, unknown: await storeReadsPerRequest(unknown), revoked: await storeReadsPerRequest(revoked.secret) });
    }

    expect(timeline.filter((t) => t.unknown !== t.revoked)).toEqual([]);
    expect(timeline.some((t) => t.unknown === 1)).toBe(true);
  });
});
