#!/usr/bin/env node
// The ongrid CLI. TypeScript sources run through tsx's loader, so no build step is needed.
import { register } from "tsx/esm/api";

register();
await import("../manager/cli/main.ts");
