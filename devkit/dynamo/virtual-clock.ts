/**
 * Discrete-event time for the in-memory DynamoDB model and the hot-organization bench: `sleep` only
 * resolves when `run` advances the clock to it, so offered load is limited by nothing but the model
 * (not by this machine's cores), and a run is repeatable for a given random seed.
 */
export class VirtualClock {
  private nowMs: number;
  private readonly timers: { at: number; seq: number; wake: () => void }[] = [];
  private seq = 0;

  constructor(startMs: number) {
    this.nowMs = startMs;
  }

  readonly now = (): number => this.nowMs;

  readonly sleep = (ms: number): Promise<void> =>
    new Promise((wake) => {
      this.push({ at: this.nowMs + Math.max(0, ms), seq: this.seq++, wake });
    });

  /**
   * Advances time timer by timer, letting every promise chain that a wake-up starts settle before
   * the next one, until no timer is left or the next one is past `untilMs`.
   */
  async run(untilMs = Number.POSITIVE_INFINITY): Promise<void> {
    await settle();
    while (this.timers.length > 0 && (this.timers[0]?.at ?? Infinity) <= untilMs) {
      const next = this.pop();
      this.nowMs = Math.max(this.nowMs, next.at);
      next.wake();
      while (this.timers.length > 0 && this.timers[0]?.at === next.at) this.pop().wake();
      await settle();
    }
    if (Number.isFinite(untilMs)) this.nowMs = Math.max(this.nowMs, untilMs);
  }

  /**
   * {@link run} with `work` under way: its value, or its error thrown, once every timer has run. A rejection
   * while the clock runs is held until then, not reported as unhandled.
   */
  async runThrough<T>(work: Promise<T>): Promise<T> {
    const settled = work.then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    await this.run();
    const outcome = await settled;
    if ('error' in outcome) throw outcome.error;
    return outcome.value;
  }

  // A binary heap ordered by (at, seq): equal times wake in the order they were set.
  private push(timer: { at: number; seq: number; wake: () => void }): void {
    const heap = this.timers;
    heap.push(timer);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  private pop(): { at: number; seq: number; wake: () => void } {
    const heap = this.timers;
    const top = heap[0]!;
    const last = heap.pop()!;
    if (heap.length > 0) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let smallest = i;
        if (l < heap.length && before(heap[l]!, heap[smallest]!)) smallest = l;
        if (r < heap.length && before(heap[r]!, heap[smallest]!)) smallest = r;
        if (smallest === i) break;
        [heap[i], heap[smallest]] = [heap[smallest]!, heap[i]!];
        i = smallest;
      }
    }
    return top;
  }
}

const before = (a: { at: number; seq: number }, b: { at: number; seq: number }) => a.at < b.at || (a.at === b.at && a.seq < b.seq);

/** Lets every queued microtask (and the promise chains they start) run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A small seeded generator (mulberry32), so model runs repeat exactly. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
