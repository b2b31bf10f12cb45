/** Label selectors, Kubernetes style (equality based): "team=payments,env!=dev,gpu,!canary". */
import { OngridError } from "../../skill/errors.ts";

type Requirement = { key: string; op: "=" | "!=" | "exists" | "!exists"; value?: string };

import { LABEL_KEY_PATTERN as KEY, LABEL_VALUE_PATTERN as VALUE } from "../../skill/identity.ts";

/** A parsed selector; an empty selector matches everything. */
export interface Selector {
  matches(labels: Readonly<Record<string, string>>): boolean;
  readonly text: string;
}

/** Parses a selector, naming the clause that is wrong. */
export function parseSelector(text: string, field = "selector"): Selector {
  const reqs: Requirement[] = [];
  for (const raw of text.split(",").map((c) => c.trim()).filter(Boolean)) {
    let req: Requirement;
    const m = /^([^=!]+?)\s*(==|!=|=)\s*(.*)$/.exec(raw);
    if (m) req = { key: m[1].trim(), op: m[2] === "!=" ? "!=" : "=", value: m[3].trim() };
    else if (raw.startsWith("!")) req = { key: raw.slice(1).trim(), op: "!exists" };
    else req = { key: raw, op: "exists" };
    if (!KEY.test(req.key) || (req.value !== undefined && !VALUE.test(req.value))) {
      throw new OngridError("invalid_argument", `${field}: clause "${raw}" is not key=value, key!=value, key or !key (rule: selector)`, 'e.g. "team=payments,env!=dev"');
    }
    reqs.push(req);
  }
  return {
    text,
    matches(labels) {
      return reqs.every((r) => {
        const has = Object.prototype.hasOwnProperty.call(labels, r.key);
        switch (r.op) {
          case "=":
            return has && labels[r.key] === r.value;
          case "!=":
            return !has || labels[r.key] !== r.value;
          case "exists":
            return has;
          case "!exists":
            return !has;
        }
      });
    },
  };
}
