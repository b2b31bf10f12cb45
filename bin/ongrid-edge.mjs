#!/usr/bin/env node
// The edge agent from source (development); production edges run the compiled dist/ongrid-edge.
import { register } from "tsx/esm/api";

register();
await import("../edge/cli.ts");
