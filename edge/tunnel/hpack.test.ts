import { describe, expect, it } from "vitest";
import { HUFFMAN_CODES, HUFFMAN_LENGTHS, HpackDecoder, HpackError, encodeHeaders, huffmanDecode } from "./hpack.ts";

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ""), "hex");

/** A Huffman encoder for the tests (the client never Huffman-codes what it sends). */
function huffmanEncode(text: string): Buffer {
  let bits = "";
  for (const ch of Buffer.from(text, "latin1")) bits += HUFFMAN_CODES[ch].toString(2).padStart(HUFFMAN_LENGTHS[ch], "0");
  bits += "1".repeat((8 - (bits.length % 8)) % 8);
  return Buffer.from(bits.match(/.{8}/g)!.map((b) => parseInt(b, 2)));
}

describe("HPACK Huffman code", () => {
  it("is the canonical code of RFC 7541 Appendix B", () => {
    // A few codes as printed in the RFC, and EOS (30 ones).
    expect([HUFFMAN_CODES[0], HUFFMAN_LENGTHS[0]]).toEqual([0x1ff8, 13]);
    expect([HUFFMAN_CODES[0x20], HUFFMAN_LENGTHS[0x20]]).toEqual([0x14, 6]);
    expect([HUFFMAN_CODES[0x30], HUFFMAN_LENGTHS[0x30]]).toEqual([0x0, 5]);
    expect([HUFFMAN_CODES[0x61], HUFFMAN_LENGTHS[0x61]]).toEqual([0x3, 5]);
    expect([HUFFMAN_CODES[0xff], HUFFMAN_LENGTHS[0xff]]).toEqual([0x3ffffee, 26]);
    expect([HUFFMAN_CODES[256], HUFFMAN_LENGTHS[256]]).toEqual([0x3fffffff, 30]);
    expect(HUFFMAN_LENGTHS.reduce((sum, len) => sum + 2 ** -len, 0)).toBe(1); // a complete prefix code
  });

  it("decodes every octet value", () => {
    const all = Array.from({ length: 256 }, (_, i) => String.fromCharCode(i)).join("");
    expect(huffmanDecode(huffmanEncode(all))).toBe(all);
    expect(huffmanDecode(huffmanEncode("application/grpc+proto"))).toBe("application/grpc+proto");
    expect(huffmanDecode(Buffer.alloc(0))).toBe("");
  });

  it("rejects padding that is too long or not all ones, and an encoded EOS", () => {
    expect(() => huffmanDecode(Buffer.concat([huffmanEncode("a"), Buffer.from([0xff])]))).toThrow(HpackError);
    expect(() => huffmanDecode(Buffer.from([0x00]))).toThrow(HpackError); // "0" (00000) then 000 padding
    expect(() => huffmanDecode(Buffer.from([0xff, 0xff, 0xff, 0xff]))).toThrow(HpackError);
  });
});

describe("HPACK decoder", () => {
  it("decodes the RFC 7541 C.4 requests (Huffman, dynamic table across blocks)", () => {
    const d = new HpackDecoder();
    expect(d.decode(hex("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff"))).toEqual([
      [":method", "GET"], [":scheme", "http"], [":path", "/"], [":authority", "www.example.com"],
    ]);
    expect(d.decode(hex("8286 84be 5886 a8eb 1064 9cbf"))).toEqual([
      [":method", "GET"], [":scheme", "http"], [":path", "/"], [":authority", "www.example.com"], ["cache-control", "no-cache"],
    ]);
    expect(d.decode(hex("8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf"))).toEqual([
      [":method", "GET"], [":scheme", "https"], [":path", "/index.html"], [":authority", "www.example.com"], ["custom-key", "custom-value"],
    ]);
  });

  it("decodes literals without indexing and never indexed, with indexed or new names", () => {
    const d = new HpackDecoder();
    // 0x04: without indexing, name from static index 4 (:path); 0x10: never indexed, new name.
    expect(d.decode(Buffer.concat([Buffer.from([0x04, 0x02]), Buffer.from("/x"), Buffer.from([0x10, 0x01]), Buffer.from("k"), Buffer.from([0x01]), Buffer.from("v")]))).toEqual([
      [":path", "/x"], ["k", "v"],
    ]);
    // Neither form touched the dynamic table: index 62 does not exist.
    expect(() => d.decode(Buffer.from([0xbe]))).toThrow(/out of range/);
  });

  it("evicts the oldest entries past the table size and honours size updates", () => {
    const d = new HpackDecoder(100);
    const add = (name: string, value: string) => Buffer.concat([Buffer.from([0x40, name.length]), Buffer.from(name), Buffer.from([value.length]), Buffer.from(value)]);
    d.decode(add("a", "1")); // 34 bytes
    d.decode(add("b", "2")); // 68
    d.decode(add("c", "3")); // 102 > 100: "a" is evicted
    expect(d.decode(Buffer.from([0xbe, 0xbf]))).toEqual([["c", "3"], ["b", "2"]]);
    expect(() => d.decode(Buffer.from([0xc0]))).toThrow(HpackError);
    d.decode(Buffer.from([0x20])); // size update to 0 empties the table
    expect(() => d.decode(Buffer.from([0xbe]))).toThrow(HpackError);
    expect(() => d.decode(Buffer.from([0x3f, 0xe1, 0x01]))).toThrow(/exceeds/); // 31 + 97 + 1·128 = 256 > 100
    expect(() => d.decode(Buffer.concat([Buffer.from([0x82]), Buffer.from([0x20])]))).toThrow(/after a header field/);
  });

  it("decodes multi-byte integers and rejects truncated input and index 0", () => {
    const d = new HpackDecoder();
    const long = "x".repeat(300);
    // 300 with a 7-bit prefix: 127, then 173 as 0xad 0x01 (RFC 7541 §5.1).
    const block = Buffer.concat([Buffer.from([0x00, 0x01]), Buffer.from("k"), Buffer.from([0x7f, 0xad, 0x01]), Buffer.from(long)]);
    expect(d.decode(block)).toEqual([["k", long]]);
    expect(() => d.decode(Buffer.from([0x80]))).toThrow(/index 0/);
    expect(() => d.decode(Buffer.from([0x00, 0x05, 0x61]))).toThrow(/truncated/);
    expect(() => d.decode(Buffer.from([0xff, 0x80]))).toThrow(/truncated/);
  });
});

describe("HPACK encoder", () => {
  it("writes literals without indexing that a decoder reads back, long values included", () => {
    const fields: Array<[string, string]> = [[":method", "POST"], ["authorization", `Bearer ${"t".repeat(500)}`], ["te", "trailers"]];
    const block = encodeHeaders(fields);
    expect(block[0]).toBe(0x00);
    expect(new HpackDecoder().decode(block)).toEqual(fields);
  });
});
