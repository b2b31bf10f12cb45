/** drizzle-kit configuration: `npm run gen` writes migrations into manager/db/migrations (committed). */
import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "postgresql",
  schema: "./manager/db/schema/index.ts",
  out: "./manager/db/migrations",
  strict: true,
  verbose: true,
});
