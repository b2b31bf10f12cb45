/**
 * The config schema's validator. From source it is compiled on first use; the CLI build
 * (scripts/build-cli.mjs) replaces this module with the same validator compiled ahead of time
 * (Ajv standalone code), so no command pays for compiling it at start.
 */
import { Ajv, type Options, type ValidateFunction } from "ajv";
import { DURATION_PATTERN } from "../../skill/duration.ts";
import { CONFIG_SCHEMA } from "./schema.ts";

/** The Ajv instance the config is checked with: at run time, and by the build for its standalone copy. */
export function createConfigAjv(extra: Options = {}): Ajv {
  const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: true, ...extra });
  ajv.addKeyword({ keyword: "env", schemaType: "string" });
  // What a refusal says of a value its subschema does not hold (load.ts reads it; it never quotes the value).
  ajv.addKeyword({ keyword: "message", schemaType: "string" });
  ajv.addFormat("duration", DURATION_PATTERN);
  return ajv;
}

let compiled: ValidateFunction | undefined;

/** The validator, compiled on first use. */
export function configValidator(): ValidateFunction {
  compiled ??= createConfigAjv().compile(CONFIG_SCHEMA);
  return compiled;
}
