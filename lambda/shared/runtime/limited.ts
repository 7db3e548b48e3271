/**
 * Runs `work` over `items` with at most `limit` calls in flight and waits for every call started; the results
 * are in input order. With `stopOnFailure`, no item is started after a call failed, and those never started
 * have no result.
 */
export async function settleLimited<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<R>,
  { stopOnFailure = false } = {},
): Promise<(PromiseSettledResult<R> | undefined)[]> {
  const results: (PromiseSettledResult<R> | undefined)[] = new Array(items.length);
  let next = 0;
  let failed = false;
  const lane = async () => {
    while (!(stopOnFailure && failed) && next < items.length) {
      const index = next++;
      try {
        results[index] = { status: 'fulfilled', value: await work(items[index]!) };
      } catch (reason) {
        failed = true;
        results[index] = { status: 'rejected', reason };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}
