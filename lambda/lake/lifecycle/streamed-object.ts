import type { LakeStore, UploadedPart } from '../ports.js';

/**
 * S3's multipart limits (https://docs.aws.amazon.com/AmazonS3/latest/userguide/qfacts.html): every part but
 * the last at least 5 MiB and at most 5 GiB, part numbers 1 to 10,000.
 */
export const S3_MULTIPART = { minPartBytes: 5 * 1024 * 1024, maxPartBytes: 5 * 1024 * 1024 * 1024, maxParts: 10_000 } as const;

/**
 * Bytes per uploaded part: above S3's 5 MiB minimum by a margin, small enough that one part buffered while the
 * next row groups are encoded costs little memory; 10,000 parts of it allow objects of up to ~78 GiB.
 */
export const DEFAULT_UPLOAD_PART_BYTES = 8 * 1024 * 1024;

/** Where an object written in pieces stands: nothing is visible under its key until {@link StreamedObject.end}. */
export interface StreamedObject {
  /** Appends bytes; a part is uploaded each time `partBytes` have gathered. */
  write(bytes: Uint8Array): Promise<void>;
  /** Appends the last bytes and makes the object visible (one PUT if it never reached a part, else CompleteMultipartUpload). */
  end(bytes: Uint8Array): Promise<void>;
  /** Gives up: aborts the multipart upload, if one was started, so its parts are not kept (and billed). */
  abort(): Promise<void>;
  /** Parts uploaded so far (0 while the object is small enough for one PUT). */
  readonly partsUploaded: number;
}

/**
 * An object written piece by piece, never held whole: pieces gather until `partBytes`, then go out as one
 * UploadPart of a multipart upload started on the first full part. An object that ends below `partBytes` is one
 * PUT, as before. Either way the object appears whole at the last call, or not at all.
 */
export function streamedObject(store: LakeStore, key: string, contentType: string, partBytes = DEFAULT_UPLOAD_PART_BYTES): StreamedObject {
  if (partBytes < S3_MULTIPART.minPartBytes || partBytes > S3_MULTIPART.maxPartBytes) {
    throw new RangeError(`streamedObject: partBytes must be within S3's part sizes (${S3_MULTIPART.minPartBytes}–${S3_MULTIPART.maxPartBytes}), not ${partBytes}`);
  }
  let pieces: Uint8Array[] = [];
  let gathered = 0;
  let uploadId: string | undefined;
  const parts: UploadedPart[] = [];
  let state: 'open' | 'ended' | 'aborted' = 'open';

  const take = () => {
    const body = Buffer.concat(pieces, gathered);
    pieces = [];
    gathered = 0;
    return body;
  };
  const uploadPart = async (body: Uint8Array) => {
    if (parts.length === S3_MULTIPART.maxParts) throw new RangeError(`${key}: more than ${S3_MULTIPART.maxParts} parts of ${partBytes} bytes`);
    uploadId ??= await store.createMultipartUpload(key, contentType);
    parts.push(await store.uploadPart(key, uploadId, parts.length + 1, body));
  };
  const mustBeOpen = () => {
    if (state !== 'open') throw new Error(`${key}: written after it was ${state}`);
  };

  return {
    get partsUploaded() {
      return parts.length;
    },
    async write(bytes) {
      mustBeOpen();
      pieces.push(bytes);
      gathered += bytes.length;
      if (gathered >= partBytes) await uploadPart(take());
    },
    async end(bytes) {
      mustBeOpen();
      pieces.push(bytes);
      gathered += bytes.length;
      if (uploadId === undefined && gathered < partBytes) {
        await store.put(key, take(), contentType);
      } else {
        await uploadPart(take());
        await store.completeMultipartUpload(key, uploadId!, parts);
      }
      state = 'ended';
    },
    async abort() {
      if (state !== 'open') return;
      state = 'aborted';
      pieces = [];
      if (uploadId !== undefined) await store.abortMultipartUpload(key, uploadId);
    },
  };
}
