import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["skill/**/*.test.ts", "manager/**/*.test.ts", "edge/**/*.test.ts", "test/**/*.test.ts", "scripts/**/*.test.ts", "skill-packs/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    globalSetup: ["test/global-setup.ts"],
  },
});
