/** The edge's Connect transport: gRPC (Connect's own protocol code) over the small HTTP/2 client in h2-client.ts. */
import type { Transport } from "@connectrpc/connect";
import { validateReadWriteMaxBytes } from "@connectrpc/connect/protocol";
import { createTransport } from "@connectrpc/connect/protocol-grpc";
import { createH2Client, type H2ClientOptions } from "./h2-client.ts";

/**
 * A gRPC transport to `baseUrl` (http:// for cleartext HTTP/2, https:// for TLS). Messages are
 * never compressed either way: the manager's tunnel does not compress, so offering gzip would
 * only load zlib.
 */
export function createTunnelTransport(baseUrl: string, opts: H2ClientOptions = {}): Transport {
  return createTransport({
    httpClient: createH2Client(opts),
    baseUrl,
    useBinaryFormat: true,
    interceptors: [],
    acceptCompression: [],
    sendCompression: null,
    ...validateReadWriteMaxBytes(undefined, undefined, undefined),
  });
}
