/** Small pieces every page uses: errors, chips, times and the skill result envelope. */
import type { ReactNode } from "react";
import type { JsonValue } from "@bufbuild/protobuf";
import { toJson } from "@bufbuild/protobuf";
import { ValueSchema, timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { SkillClass, SkillScope, type SkillResult } from "../../../proto/gen/ongrid/v1/skill_pb.ts";
import { errorText } from "./client.ts";

/** An error a call threw, announced to screen readers. */
export function ErrorNote(props: { error: unknown; children?: ReactNode }) {
  if (!props.error) return null;
  return (
    <p className="error" role="alert">
      {props.children}
      {errorText(props.error)}
    </p>
  );
}

/** A small labelled tag. */
export function Chip(props: { children: ReactNode; kind?: string; title?: string }) {
  return (
    <span className={`chip ${props.kind ?? ""}`} title={props.title}>
      {props.children}
    </span>
  );
}

/** "safe", "mutating", "dangerous". */
export function className(c: SkillClass): string {
  return c === SkillClass.MUTATING ? "mutating" : c === SkillClass.DANGEROUS ? "dangerous" : "safe";
}

/** The class badge of a skill. */
export function ClassBadge(props: { value: SkillClass }) {
  const name = className(props.value);
  return <Chip kind={`class-${name}`}>{name}</Chip>;
}

/** The scope chip: edge (host) or manager. */
export function ScopeChip(props: { value: SkillScope }) {
  const manager = props.value === SkillScope.MANAGER;
  return <Chip kind={manager ? "scope-manager" : "scope-edge"}>{manager ? "manager" : "edge"}</Chip>;
}

/** A protobuf timestamp as local date and time, with the ISO form on hover. */
export function Time(props: { value?: Timestamp }) {
  if (!props.value || (props.value.seconds === 0n && props.value.nanos === 0)) return <span className="muted">—</span>;
  const d = timestampDate(props.value);
  return (
    <time dateTime={d.toISOString()} title={d.toISOString()}>
      {d.toLocaleString()}
    </time>
  );
}

/** Pretty JSON for display. */
export function json(value: unknown): string {
  return JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? v.toString() : v), 2);
}

/** The result envelope: success or the error with its code, message and hint, duration, truncation, output. */
export function ResultView(props: { result: SkillResult; label?: string }) {
  const r = props.result;
  return (
    <section className={`result ${r.success ? "ok" : "failed"}`} aria-label={props.label ?? "Result"} data-testid="result" data-success={String(r.success)}>
      <p className="result-head">
        <strong>{r.success ? "Succeeded" : "Failed"}</strong>
        {r.edgeId ? <Chip>{r.edgeId}</Chip> : null}
        <span className="muted">{r.durationMs} ms</span>
        {r.truncated ? <Chip kind="warn">output truncated</Chip> : null}
      </p>
      {r.error ? (
        <div className="result-error">
          <p>
            <code>{r.error.code}</code> {r.error.message}
          </p>
          {r.error.hint ? <p className="hint">Hint: {r.error.hint}</p> : null}
        </div>
      ) : null}
      <OutputView value={r.output ? toJson(ValueSchema, r.output) : undefined} />
    </section>
  );
}

/** The fields of a command's output that OutputView shows on their own. */
const COMMAND_FIELDS = new Set(["command", "exit_code", "signal", "stdout", "stderr", "stdout_truncated", "stderr_truncated"]);

/**
 * A call's output, readable: nothing for none (never "null"); a command's output (exec, a pack's
 * pod_execute: stdout/stderr) as its exit code and two text blocks, the other fields folded away;
 * a string as text; anything else as JSON. Every page that shows a call's output uses it.
 */
export function OutputView(props: { value: JsonValue | undefined }) {
  const v = props.value;
  if (v === undefined || v === null) return null;
  if (typeof v === "string") return <pre className="output">{v}</pre>;
  if (typeof v !== "object" || Array.isArray(v) || (typeof v.stdout !== "string" && typeof v.stderr !== "string")) return <pre className="output">{json(v)}</pre>;
  const rest = Object.fromEntries(Object.entries(v).filter(([k]) => !COMMAND_FIELDS.has(k)));
  const stream = (name: "stdout" | "stderr") => {
    const text = v[name];
    if (typeof text !== "string") return null;
    return (
      <div className="stream">
        <span className="stream-name">
          {name}
          {v[`${name}_truncated`] === true ? <Chip kind="warn">truncated</Chip> : null}
        </span>
        {text ? (
          <pre className={`output ${name}`} data-testid={name}>
            {text}
          </pre>
        ) : (
          <span className="muted" data-testid={name}>
            {" "}
            (empty)
          </span>
        )}
      </div>
    );
  };
  return (
    <div className="command-output" data-testid="command-output">
      <p className="row">
        {typeof v.exit_code === "number" ? (
          <span data-testid="exit-code">
            Exit code <strong>{v.exit_code}</strong>
          </span>
        ) : null}
        {typeof v.signal === "string" ? (
          <span>
            killed by <code>{v.signal}</code>
          </span>
        ) : null}
        {typeof v.command === "string" ? <code className="command">{v.command}</code> : null}
      </p>
      {stream("stdout")}
      {stream("stderr")}
      {Object.keys(rest).length ? (
        <details>
          <summary>Other fields</summary>
          <pre className="output">{json(rest)}</pre>
        </details>
      ) : null}
    </div>
  );
}

/** A result envelope as JSON (the audit log's result column, an agent's tool result): success, output, error. */
export function isEnvelope(v: unknown): v is { success: boolean; output?: JsonValue; error?: { code?: string; message?: string; hint?: string } } {
  return typeof v === "object" && v !== null && !Array.isArray(v) && typeof (v as { success?: unknown }).success === "boolean";
}
