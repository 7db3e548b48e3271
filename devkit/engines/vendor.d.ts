declare module 'kinesalite' {
  import type { Server } from 'node:http';

  interface KinesaliteOptions {
    path?: string;
    createStreamMs?: number;
    deleteStreamMs?: number;
    updateStreamMs?: number;
    shardLimit?: number;
    ssl?: boolean;
  }

  function kinesalite(options?: KinesaliteOptions): Server;
  export default kinesalite;
}

declare module 's3rver' {
  import type { AddressInfo } from 'node:net';
  import type { Server } from 'node:http';

  interface S3rverOptions {
    address?: string;
    port?: number;
    silent?: boolean;
    directory?: string;
    resetOnClose?: boolean;
    allowMismatchedSignatures?: boolean;
    vhostBuckets?: boolean;
    configureBuckets?: { name: string; configs?: string[] }[];
  }

  class S3rver {
    constructor(options?: S3rverOptions);
    httpServer?: Server;
    /** Internal: the `FilesystemStore` (see devkit/engines/s3rver-atomic-writes.ts). */
    store: unknown;
    run(): Promise<AddressInfo>;
    close(): Promise<void>;
  }
  export default S3rver;
}

declare module 'leveldown' {
  /** leveldown 5's constructor; its prototype is what devkit/engines/leveldown-closed-guard.ts guards. */
  interface LevelDownConstructor {
    (location: string): unknown;
    prototype: Record<string | symbol, unknown>;
  }
  const leveldown: LevelDownConstructor;
  export default leveldown;
}
