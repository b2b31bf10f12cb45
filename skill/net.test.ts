import { describe, expect, it } from "vitest";
import { isLoopbackHost } from "./net.ts";

describe("isLoopbackHost", () => {
  it("knows loopback names and addresses, bracketed or not, and nothing else", () => {
    for (const h of ["localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "::1", "[::1]"]) expect(isLoopbackHost(h), h).toBe(true);
    for (const h of ["0.0.0.0", "::", "[::]", "10.0.0.1", "127.0.0.1.example.com", "localhost.example.com", "1.127.0.0.1", "ongrid.example", ""]) expect(isLoopbackHost(h), h).toBe(false);
  });
});
