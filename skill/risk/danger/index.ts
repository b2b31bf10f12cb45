/** The destroyer rules of every family, in the order the classifier asks them. */
import type { DangerRule } from "./common.ts";
import { fileRule } from "./files.ts";
import { networkRule } from "./network.ts";
import { storageRule } from "./storage.ts";
import { systemRule } from "./system.ts";
import { wrapperRule } from "./wrappers.ts";

export const DANGER_RULES: readonly DangerRule[] = [wrapperRule, storageRule, fileRule, systemRule, networkRule];
