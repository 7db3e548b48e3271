/**
 * kinesalite keeps a persisted stream (the local stack's `.local/kinesis`) in LevelDB through leveldown 5,
 * and reaches it through subleveldown, which calls leveldown directly and so skips levelup's "Database is
 * not open" check. leveldown 5 defers a close until the operations queued before it are done
 * (Level/leveldown#612), but an operation queued after the close runs LevelDB's native code on the freed
 * database: a segmentation fault of the whole process. kinesalite queues such operations whenever a request
 * handler, or one of its stream-state timers (`createStreamMs` and the like), is still at work as the engine
 * stops; a busy machine widens that window. That was CI's exit code 139 (issue 37): a core dump of the
 * crashed process stopped in `GetWorker::DoExecute` of leveldown's binding, on a libuv worker thread.
 *
 * So every operation of a leveldown that is not open fails through its callback with the error leveldown 6
 * (abstract-leveldown 7) gives, and never reaches the binding. leveldown's own `_iterator` already refuses,
 * but by throwing, which inside a kinesalite callback is an uncaught exception: here it hands back an
 * iterator that fails instead.
 */
const GUARDED = Symbol.for('trace-ingest.leveldown-closed-guard');

type Callback = (error?: Error | null, ...values: unknown[]) => void;
type Method = (this: LevelDownLike, ...args: unknown[]) => unknown;
interface LevelDownLike {
  status: string;
}
type Prototype = Record<string | symbol, unknown>;

export const NOT_OPEN_MESSAGE = 'Database is not open';

const notOpen = () => new Error(NOT_OPEN_MESSAGE);

/** The operations whose last argument is their callback, each queued to a native worker. */
const CALLBACK_OPERATIONS = ['_put', '_get', '_del', '_batch', 'approximateSize', 'compactRange'] as const;

/**
 * Loads leveldown (only where a store is persisted: an in-memory kinesalite never loads the native addon) and
 * guards it; idempotent.
 */
export async function guardLevelDown(): Promise<void> {
  const { default: leveldown } = await import('leveldown');
  refuseOperationsWhenNotOpen(leveldown.prototype);
}

/** Makes leveldown's operations on a database that is not open fail instead of crashing; idempotent. */
export function refuseOperationsWhenNotOpen(prototype: Prototype): void {
  if (prototype[GUARDED]) return;
  prototype[GUARDED] = true;
  for (const name of CALLBACK_OPERATIONS) {
    const operation = prototype[name] as Method;
    prototype[name] = function (this: LevelDownLike, ...args: unknown[]) {
      if (this.status === 'open') return operation.apply(this, args);
      process.nextTick(args[args.length - 1] as Callback, notOpen());
      return undefined;
    };
  }
  const iterator = prototype._iterator as Method;
  prototype._iterator = function (this: LevelDownLike, ...args: unknown[]) {
    if (this.status === 'open') return iterator.apply(this, args);
    return {
      next: (callback: Callback) => process.nextTick(callback, notOpen()),
      end: (callback: Callback) => process.nextTick(callback),
      seek: () => undefined,
    };
  };
  const chainedBatch = prototype._chainedBatch as Method;
  prototype._chainedBatch = function (this: LevelDownLike, ...args: unknown[]) {
    const batch = chainedBatch.apply(this, args) as Prototype;
    const write = batch._write as (...writeArgs: unknown[]) => unknown;
    batch._write = (options: unknown, callback: Callback) => {
      if (this.status === 'open') return write.call(batch, options, callback);
      process.nextTick(callback, notOpen());
      return undefined;
    };
    return batch;
  };
  const getProperty = prototype.getProperty as Method;
  prototype.getProperty = function (this: LevelDownLike, ...args: unknown[]) {
    if (this.status !== 'open') throw notOpen();
    return getProperty.apply(this, args);
  };
}
