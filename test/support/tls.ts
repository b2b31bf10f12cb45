/** Makes a throwaway CA and a server certificate for 127.0.0.1/localhost with openssl, for TLS tests. */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Paths and PEM contents of the generated CA and server pair. */
export interface TestPki {
  dir: string;
  caCert: string;
  caPem: Buffer;
  serverCert: string;
  serverKey: string;
}

/** Creates the CA and a server certificate signed by it (SAN: IP 127.0.0.1, DNS localhost). */
export function makeTestPki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), "ongrid-pki-"));
  const f = (n: string) => join(dir, n);
  const ssl = (...args: string[]) => execFileSync("openssl", args, { stdio: "pipe" });
  ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=ongrid test CA", "-keyout", f("ca.key"), "-out", f("ca.crt"));
  ssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", f("server.key"), "-out", f("server.csr"));
  writeFileSync(f("ext.cnf"), "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
  ssl("x509", "-req", "-in", f("server.csr"), "-CA", f("ca.crt"), "-CAkey", f("ca.key"), "-CAcreateserial", "-days", "2", "-extfile", f("ext.cnf"), "-out", f("server.crt"));
  return { dir, caCert: f("ca.crt"), caPem: readFileSync(f("ca.crt")), serverCert: f("server.crt"), serverKey: f("server.key") };
}
