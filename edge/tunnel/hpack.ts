/**
 * HPACK (RFC 7541) for the edge's HTTP/2 client: a complete decoder (static and dynamic table,
 * Huffman) and a minimal encoder that sends every field as a literal without indexing, so the
 * peer's table is never touched and the encoder keeps no state.
 */

/** A decoding failure: the connection must end with COMPRESSION_ERROR. */
export class HpackError extends Error {}

/** The static table (RFC 7541 Appendix A), index 1 first. */
const STATIC: ReadonlyArray<readonly [string, string]> = [
  [":authority", ""], [":method", "GET"], [":method", "POST"], [":path", "/"], [":path", "/index.html"],
  [":scheme", "http"], [":scheme", "https"], [":status", "200"], [":status", "204"], [":status", "206"],
  [":status", "304"], [":status", "400"], [":status", "404"], [":status", "500"], ["accept-charset", ""],
  ["accept-encoding", "gzip, deflate"], ["accept-language", ""], ["accept-ranges", ""], ["accept", ""],
  ["access-control-allow-origin", ""], ["age", ""], ["allow", ""], ["authorization", ""], ["cache-control", ""],
  ["content-disposition", ""], ["content-encoding", ""], ["content-language", ""], ["content-length", ""],
  ["content-location", ""], ["content-range", ""], ["content-type", ""], ["cookie", ""], ["date", ""], ["etag", ""],
  ["expect", ""], ["expires", ""], ["from", ""], ["host", ""], ["if-match", ""], ["if-modified-since", ""],
  ["if-none-match", ""], ["if-range", ""], ["if-unmodified-since", ""], ["last-modified", ""], ["link", ""],
  ["location", ""], ["max-forwards", ""], ["proxy-authenticate", ""], ["proxy-authorization", ""], ["range", ""],
  ["referer", ""], ["refresh", ""], ["retry-after", ""], ["server", ""], ["set-cookie", ""],
  ["strict-transport-security", ""], ["transfer-encoding", ""], ["user-agent", ""], ["vary", ""], ["via", ""],
  ["www-authenticate", ""],
];

/**
 * Huffman code lengths of symbols 0–255 (RFC 7541 Appendix B); EOS (256) is 30 bits. The code is
 * canonical, so the codes themselves follow from the lengths (shorter first, then by symbol).
 */
const HUFFMAN_LENGTHS = [
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,
  6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10,
  13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6,
  15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28,
  20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,
  22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
  26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,
  20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,
  30,
];
const EOS = 256;

/** The Huffman codes (symbol → code) derived from the lengths; exported for the encoder in tests. */
export const HUFFMAN_CODES: readonly number[] = (() => {
  const order = HUFFMAN_LENGTHS.map((len, sym) => [len, sym]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const codes: number[] = new Array(HUFFMAN_LENGTHS.length);
  let code = 0;
  let prev = order[0][0];
  for (const [len, sym] of order) {
    code *= 2 ** (len - prev);
    prev = len;
    codes[sym] = code++;
  }
  return codes;
})();
export { HUFFMAN_LENGTHS };

// The decoding tree, built on first use: node n has children tree[2n] (bit 0) and tree[2n+1]
// (bit 1); a child value v < 0 is the leaf for symbol -v-1, 0 means "no child yet".
let tree: Int32Array | undefined;
function huffmanTree(): Int32Array {
  if (tree) return tree;
  const t = new Int32Array(2 * 512);
  let nodes = 1;
  for (let sym = 0; sym < HUFFMAN_LENGTHS.length; sym++) {
    const len = HUFFMAN_LENGTHS[sym];
    const code = HUFFMAN_CODES[sym];
    let n = 0;
    for (let i = len - 1; i >= 0; i--) {
      const slot = 2 * n + (Math.floor(code / 2 ** i) & 1);
      if (i === 0) t[slot] = -sym - 1;
      else n = t[slot] || (t[slot] = nodes++);
    }
  }
  return (tree = t);
}

/** Decodes a Huffman-coded string literal (latin1: one char per octet). */
export function huffmanDecode(buf: Uint8Array): string {
  const t = huffmanTree();
  let out = "";
  let n = 0;
  let depth = 0; // bits read since the last symbol
  let allOnes = true; // whether those bits are all 1 (a valid padding so far)
  for (const byte of buf) {
    for (let i = 7; i >= 0; i--) {
      const bit = (byte >> i) & 1;
      const next = t[2 * n + bit];
      allOnes &&= bit === 1;
      depth++;
      if (next < 0) {
        const sym = -next - 1;
        if (sym === EOS) throw new HpackError("Huffman string contains EOS");
        out += String.fromCharCode(sym);
        n = 0;
        depth = 0;
        allOnes = true;
      } else if (next === 0) {
        throw new HpackError("invalid Huffman code");
      } else {
        n = next;
      }
    }
  }
  // What is left must be a prefix of EOS (all ones) shorter than 8 bits.
  if (depth > 7 || !allOnes) throw new HpackError("invalid Huffman padding");
  return out;
}

/** Decodes header blocks for one connection; holds the dynamic table the peer's encoder fills. */
export class HpackDecoder {
  private dynamic: Array<[string, string]> = []; // newest first
  private size = 0;
  private maxSize: number;

  /** `maxTableSize` is the SETTINGS_HEADER_TABLE_SIZE we advertise (4096 unless we say otherwise). */
  constructor(private readonly maxTableSize = 4096) {
    this.maxSize = maxTableSize;
  }

  /** Decodes one complete header block into [name, value] pairs in order. */
  decode(block: Uint8Array): Array<[string, string]> {
    const out: Array<[string, string]> = [];
    let pos = 0;
    const int = (prefixBits: number): number => {
      const mask = (1 << prefixBits) - 1;
      let v = block[pos++] & mask;
      if (v < mask) return v;
      let m = 1;
      for (;;) {
        if (pos >= block.length) throw new HpackError("truncated integer");
        const b = block[pos++];
        v += (b & 0x7f) * m;
        m *= 128;
        if (v > 0xffffffff) throw new HpackError("integer too large");
        if (!(b & 0x80)) return v;
      }
    };
    const str = (): string => {
      if (pos >= block.length) throw new HpackError("truncated string");
      const huffman = (block[pos] & 0x80) !== 0;
      const len = int(7);
      if (pos + len > block.length) throw new HpackError("truncated string");
      const raw = block.subarray(pos, pos + len);
      pos += len;
      return huffman ? huffmanDecode(raw) : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString("latin1");
    };
    const entry = (index: number): readonly [string, string] => {
      if (index >= 1 && index <= STATIC.length) return STATIC[index - 1];
      const e = this.dynamic[index - STATIC.length - 1];
      if (!e) throw new HpackError(`header index ${index} is out of range`);
      return e;
    };
    let sawField = false;
    while (pos < block.length) {
      const b = block[pos];
      if (b & 0x80) {
        const index = int(7);
        if (index === 0) throw new HpackError("header index 0");
        const [name, value] = entry(index);
        out.push([name, value]);
        sawField = true;
      } else if (b & 0x40) {
        const index = int(6);
        const name = index ? entry(index)[0] : str();
        const value = str();
        out.push([name, value]);
        this.insert(name, value);
        sawField = true;
      } else if (b & 0x20) {
        // A table size update is only allowed at the start of a block.
        if (sawField) throw new HpackError("dynamic table size update after a header field");
        const size = int(5);
        if (size > this.maxTableSize) throw new HpackError(`dynamic table size ${size} exceeds ${this.maxTableSize}`);
        this.maxSize = size;
        this.evict();
      } else {
        // Literal without indexing (0000) or never indexed (0001): same shape, no table change.
        const index = int(4);
        const name = index ? entry(index)[0] : str();
        out.push([name, str()]);
        sawField = true;
      }
    }
    return out;
  }

  private insert(name: string, value: string): void {
    const size = name.length + value.length + 32;
    this.dynamic.unshift([name, value]);
    this.size += size;
    this.evict();
  }

  private evict(): void {
    while (this.size > this.maxSize && this.dynamic.length) {
      const [n, v] = this.dynamic.pop()!;
      this.size -= n.length + v.length + 32;
    }
  }
}

function pushInt(out: number[], value: number, prefixBits: number, first: number): void {
  const mask = (1 << prefixBits) - 1;
  if (value < mask) {
    out.push(first | value);
    return;
  }
  out.push(first | mask);
  value -= mask;
  while (value >= 128) {
    out.push((value % 128) | 0x80);
    value = Math.floor(value / 128);
  }
  out.push(value);
}

/** Encodes header fields as literals without indexing (new names, no Huffman): stateless. */
export function encodeHeaders(fields: Iterable<readonly [string, string]>): Buffer {
  const out: number[] = [];
  for (const [name, value] of fields) {
    const n = Buffer.from(name, "latin1");
    const v = Buffer.from(value, "latin1");
    out.push(0x00);
    pushInt(out, n.length, 7, 0);
    for (const b of n) out.push(b);
    pushInt(out, v.length, 7, 0);
    for (const b of v) out.push(b);
  }
  return Buffer.from(out);
}
