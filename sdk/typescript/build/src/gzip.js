let chosen;
/**
 * gzip: on Node, `node:zlib` at level 1 in the thread pool (a fraction of the CPU of the web
 * stream's default level, for most of the gain on trace JSON); elsewhere the web `CompressionStream`.
 */
export function gzip(data) {
    chosen ??= pickGzip();
    return chosen.then((compress) => compress(data));
}
async function pickGzip() {
    const isNode = typeof process !== 'undefined' && typeof process.versions?.node === 'string';
    if (isNode) {
        const zlib = await import('node:zlib');
        return (data) => new Promise((resolve, reject) => {
            zlib.gzip(data, { level: 1 }, (error, result) => (error ? reject(error) : resolve(result)));
        });
    }
    return async (data) => {
        const stream = new Blob([data]).stream().pipeThrough(new CompressionStream('gzip'));
        return new Uint8Array(await new Response(stream).arrayBuffer());
    };
}
