import type { ApiKey, Organization, Plan } from '../../../shared/domain/tenancy.js';
import type { TenancyReader } from './ports.js';

export interface TenancyCacheOptions {
  /** How long a found key, organization or workspace is trusted: the revocation delay. */
  ttlMs: number;
  /** How long an unknown or revoked key, or an unknown workspace, is remembered, so guessing costs no reads. */
  negativeTtlMs: number;
  /** Entries per kind; the oldest go first when full, so memory stays bounded. */
  maxEntries: number;
}

export const DEFAULT_TENANCY_CACHE: TenancyCacheOptions = { ttlMs: 30_000, negativeTtlMs: 5_000, maxEntries: 10_000 };

interface Entry<T> {
  value: Promise<T>;
  expiresAt: number;
}

class TtlCache<T> {
  private readonly entries = new Map<string, Entry<T>>();

  constructor(
    private readonly options: TenancyCacheOptions,
    private readonly isNegative: (value: T) => boolean,
    private readonly now: () => number,
  ) {}

  get(key: string, load: () => Promise<T>): Promise<T> {
    const now = this.now();
    const hit = this.entries.get(key);
    if (hit && hit.expiresAt > now) return hit.value;
    if (hit) this.entries.delete(key);
    if (this.entries.size >= this.options.maxEntries) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    // The promise itself is cached so concurrent requests for one key share one read.
    const entry: Entry<T> = { value: load(), expiresAt: now + this.options.ttlMs };
    this.entries.set(key, entry);
    entry.value.then(
      (value) => {
        if (this.isNegative(value)) entry.expiresAt = now + this.options.negativeTtlMs;
      },
      () => {
        if (this.entries.get(key) === entry) this.entries.delete(key);
      },
    );
    return entry.value;
  }
}

/**
 * Caches tenancy lookups in a warm container. A revoked key, an organization's changed plan,
 * overrides or billing status, and a changed plan's quotas each take effect within `ttlMs` (30 s by
 * default): plans are cached apart from organizations, so a plan change reaches every organization
 * on it within that delay. An unknown or revoked key is remembered for `negativeTtlMs`, the same under every
 * setting, so the two cannot be told apart by how often they reach the store.
 * Failed reads are never cached.
 */
export class CachedTenancyReader implements TenancyReader {
  private readonly keys: TtlCache<ApiKey | undefined>;
  private readonly orgs: TtlCache<Organization | undefined>;
  private readonly plans: TtlCache<Plan | undefined>;
  private readonly workspaces: TtlCache<boolean>;

  constructor(
    private readonly inner: TenancyReader,
    options: TenancyCacheOptions = DEFAULT_TENANCY_CACHE,
    now: () => number = Date.now,
  ) {
    // A revoked key is remembered exactly as long as an unknown one: one that took longer to answer (or was
    // cached longer) would tell a guesser which secrets were once real.
    this.keys = new TtlCache(options, (v) => v === undefined || v.status !== 'active', now);
    this.orgs = new TtlCache(options, (v) => v === undefined, now);
    this.plans = new TtlCache(options, (v) => v === undefined, now);
    this.workspaces = new TtlCache(options, (v) => !v, now);
  }

  getApiKeyByHash(secretHash: string): Promise<ApiKey | undefined> {
    return this.keys.get(secretHash, () => this.inner.getApiKeyByHash(secretHash));
  }

  getOrganization(orgId: string): Promise<Organization | undefined> {
    return this.orgs.get(orgId, () => this.inner.getOrganization(orgId));
  }

  getPlan(name: string): Promise<Plan | undefined> {
    return this.plans.get(name, () => this.inner.getPlan(name));
  }

  workspaceExists(orgId: string, slug: string): Promise<boolean> {
    return this.workspaces.get(`${orgId}\u0000${slug}`, () => this.inner.workspaceExists(orgId, slug));
  }
}
