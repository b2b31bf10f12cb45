import { describe, expect, it } from "vitest";
import { SkillError } from "../../../skill/errors.ts";
import { toolOutput } from "./tool-result.ts";

const secrets = [{ name: "tok", value: "s3cr3t-value-99" }];

describe("toolOutput", () => {
  it("is the structured content when there is some, else the text; secrets the upstream was given are scrubbed", () => {
    expect(toolOutput("u", "t", { content: [{ type: "text", text: "{}" }], structuredContent: { a: 1, k: "s3cr3t-value-99" } }, secrets)).toEqual({ a: 1, k: "[credential:tok]" });
    expect(toolOutput("u", "t", { content: [{ type: "text", text: "one" }, { type: "text", text: "two s3cr3t-value-99" }] }, secrets)).toBe("one\ntwo [credential:tok]");
    expect(toolOutput("u", "t", { content: [] }, secrets)).toBe("");
  });

  it("summarises images, audio and resources instead of dumping them", () => {
    const out = toolOutput(
      "u",
      "t",
      {
        content: [
          { type: "image", data: "aGVsbG8=", mimeType: "image/png" },
          { type: "audio", data: "AAAA", mimeType: "audio/wav" },
          { type: "resource", resource: { uri: "file:///x.txt", mimeType: "text/plain", text: "x".repeat(5000) } },
          { type: "resource", resource: { uri: "file:///b.bin", blob: "AAAAAAAA" } },
          { type: "resource_link", uri: "file:///y", name: "y" },
        ],
      },
      [],
    );
    expect(out).toBe(
      "[image image/png, 5 bytes, not shown]\n[audio audio/wav, 3 bytes, not shown]\n[resource file:///x.txt (text/plain), 5000 bytes of text, not shown]\n[resource file:///b.bin, 6 bytes, not shown]\n[resource link file:///y \"y\"]",
    );
  });

  it("an isError result is an upstream_error carrying the upstream's text (scrubbed) and its structured content", () => {
    let err: unknown;
    try {
      toolOutput("tickets", "close", { content: [{ type: "text", text: "no such ticket; token s3cr3t-value-99" }], structuredContent: { id: 4 }, isError: true }, secrets);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SkillError);
    expect(err).toMatchObject({ code: "upstream_error", output: { id: 4 } });
    expect((err as Error).message).toBe('the upstream MCP server "tickets" reported a failure of its tool "close": no such ticket; token [credential:tok]');
  });
});
