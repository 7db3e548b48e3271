import { type ApiKey, hashApiKey, isWellFormedApiKey } from '../../shared/domain/tenancy.js';
import { InvalidApiKeyError } from '../errors.js';
import type { TenancyReader } from '../ports.js';
import { singleHeaderValue } from './single-header-value.js';

/** Check 1: the request carries exactly one active API key. */
export async function authenticate(tenancy: TenancyReader, apiKeyValues: readonly string[]): Promise<ApiKey> {
  const header = singleHeaderValue(apiKeyValues);
  if (header.kind === 'absent') throw new InvalidApiKeyError('Invalid or missing API key: send your key in the X-API-Key header');
  if (header.kind === 'conflicting') throw new InvalidApiKeyError('Invalid or missing API key: send exactly one X-API-Key header');
  const secret = header.value;
  if (!isWellFormedApiKey(secret)) throw new InvalidApiKeyError('Invalid or missing API key: the X-API-Key value is not a valid key');
  const key = await tenancy.getApiKeyByHash(hashApiKey(secret));
  if (!key || key.status !== 'active') throw new InvalidApiKeyError('Invalid or missing API key: the key is unknown or revoked');
  return key;
}
