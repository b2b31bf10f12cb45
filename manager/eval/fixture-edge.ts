/**
 * The simulated edge of an evaluation run (J6): the real edge's skills and the shipped packs' skills
 * by their real metadata (so the manager gates, validates and audits calls to them as to any
 * edge's), connected over the real tunnel, but every call answers from the current case's recorded
 * outputs. A skill the case recorded nothing for fails ("not recorded"): the diagnosis sees a
 * failing tool, as it would on a host that cannot answer.
 */
import { createGrpcTransport } from "@connectrpc/connect-node";
import type { Logger } from "pino";
import { EDGE_BUILTINS } from "../../edge/builtin/index.ts";
import { EDGE_VERSION } from "../../edge/runtime.ts";
import { dialForever } from "../../edge/tunnel/dialer.ts";
import type { EdgeRuntime } from "../../edge/tunnel/session.ts";
import { SkillError } from "../../skill/errors.ts";
import { createPackSet } from "../../skill/pack/loader.ts";
import { createRegistry } from "../../skill/registry.ts";
import type { Skill, SkillDefinition } from "../../skill/types.ts";
import { answerFor, type Fixture } from "./cases.ts";

/** The edge id every case runs on. */
export const EVAL_EDGE = "eval-edge";

/** A connected fixture edge: set the case's fixtures before each case, read which skills were called. */
export interface FixtureEdge {
  setFixtures(fixtures: Record<string, Fixture>): void;
  /** Skill keys called since the last setFixtures, in order. */
  called(): string[];
  stop(): void;
}

/** The definition of `skill` with an executor that answers from the fixtures. */
function fixtureSkill(skill: Pick<Skill, "meta" | "riskForArgs">, answer: (key: string, params: Record<string, unknown>) => Promise<unknown>): SkillDefinition {
  const m = skill.meta;
  return {
    key: m.key,
    name: m.name,
    description: m.description,
    class: m.class,
    scope: m.scope,
    category: m.category,
    params: m.params,
    ...(m.rawSchema ? { rawSchema: m.rawSchema } : {}),
    ...(m.resultPreview ? { resultPreview: m.resultPreview } : {}),
    ...(m.riskClassifier ? { riskClassifier: m.riskClassifier } : {}),
    ...(skill.riskForArgs ? { riskForArgs: skill.riskForArgs } : {}),
    execute: (_ctx, params) => answer(m.key, params),
  };
}

/** Starts the fixture edge against a manager at `url` with an enrolled token. */
export function startFixtureEdge(o: { url: string; token: string; packDirs: readonly string[]; log: Logger }): FixtureEdge {
  let fixtures: Record<string, Fixture> = {};
  let calls: string[] = [];
  const answer = async (key: string, params: Record<string, unknown>): Promise<unknown> => {
    calls.push(key);
    const f = fixtures[key] ? answerFor(fixtures[key], params) : undefined;
    if (!f) throw new SkillError("not_recorded", `this evaluation case recorded no output of ${key}${fixtures[key] ? " for these params" : ""}`, "the case's fixtures list what this host can answer");
    if ("error" in f) throw new SkillError(f.error.code, f.error.message, f.error.hint ?? "");
    return f.output;
  };
  // The real metadata: the edge builtins, and the packs' (read from their manifests, never run).
  const source = createRegistry({ log: o.log });
  for (const def of EDGE_BUILTINS) source.register(def, { compile: "lazy" });
  if (o.packDirs.length) createPackSet({ dirs: [...o.packDirs], scope: "host", registry: source, log: o.log }).rescan();
  const registry = createRegistry({ log: o.log });
  for (const s of source.list()) registry.register(fixtureSkill(s, answer), { compile: "lazy" });

  const runtime: EdgeRuntime = {
    id: EVAL_EDGE,
    version: EDGE_VERSION,
    hostname: EVAL_EDGE,
    os: "linux/x64",
    labels: { eval: "true" },
    registry,
    settings: {},
    concurrency: 8,
    outputCapBytes: 1 << 20,
    log: o.log,
  };
  const stop = new AbortController();
  void dialForever(createGrpcTransport({ baseUrl: o.url }), o.token, runtime, { baseMs: 100, maxMs: 1000 }, stop.signal);
  return {
    setFixtures(f) {
      fixtures = f;
      calls = [];
    },
    called: () => [...calls],
    stop: () => stop.abort(),
  };
}
