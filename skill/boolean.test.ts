import { describe, expect, it } from "vitest";
import { parseBoolean } from "./boolean.ts";

describe("parseBoolean", () => {
  it("reads true/1/yes and false/0/no in any case, blanks around ignored; nothing else", () => {
    for (const w of ["true", "TRUE", " 1 ", "yes", "Yes"]) expect(parseBoolean(w), w).toBe(true);
    for (const w of ["false", "False", "0", " no"]) expect(parseBoolean(w), w).toBe(false);
    for (const w of ["", "maybe", "on", "off", "y", "2", "truee"]) expect(parseBoolean(w), w).toBeUndefined();
  });
});
