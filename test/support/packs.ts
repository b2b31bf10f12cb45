/** Test packs: a bash pack whose one skill echoes its params with a marker. */
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Writes a bash pack `<dir>/<name>` whose one skill echoes its params with a marker. */
export function writePack(dir: string, name: string, key: string, opts: { description?: string; cls?: string; marker?: string } = {}): string {
  const pack = join(dir, name);
  mkdirSync(pack, { recursive: true });
  writeFileSync(
    join(pack, "skill.json"),
    JSON.stringify({
      key,
      name: `${key} test pack`,
      description: opts.description ?? `Echoes its params back; use it to check that packs run.`,
      class: opts.cls ?? "safe",
      params: { word: { type: "string", description: "a word to echo", required: true, pattern: "^[a-z]+$" } },
      executable: "run.sh",
      timeout: "10s",
    }),
  );
  writeFileSync(join(pack, "run.sh"), `#!/bin/bash\nread -r -d '' input\nprintf '{"output": {"marker": "${opts.marker ?? name}", "params": %s, "key": "%s", "cwd": "%s"}}' "$input" "$ONGRID_SKILL_KEY" "$PWD"\n`);
  chmodSync(join(pack, "run.sh"), 0o755);
  return pack;
}

