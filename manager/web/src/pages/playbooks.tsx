/**
 * /playbooks (L2): the loaded SKILL.md playbooks with their facts, what the last load refused,
 * warned about or skipped; one playbook read whole (frontmatter facts, fallback steps and the
 * Markdown body rendered without raw HTML); and Reload for admins, showing what it reported.
 */
import { useCallback, useEffect, useId, useMemo, useState, type ReactNode } from "react";
import { Markdown } from "markdown-to-jsx/react";
import type { ListPlaybooksResponse, Playbook, PlaybookProblem, ReloadResponse, SkippedPlaybook } from "../../../../proto/gen/ongrid/v1/playbook_service_pb.ts";
import { useSession, can, roleName } from "../session.tsx";
import { navigate, segment, usePath } from "../router.tsx";
import { Chip, ErrorNote, json } from "../components.tsx";

/**
 * Markdown from the manager (a playbook body, a diagnosis report) as React elements: raw HTML is
 * not parsed (it shows as text), front matter is not hidden, URLs go through the library's
 * sanitizer, and heading ids are prefixed so they cannot collide with the page's own ids.
 */
export function SafeMarkdown(props: { text: string; label?: string }) {
  const prefix = useId().replace(/[^a-zA-Z0-9_-]/g, "");
  const options = useMemo(
    () => ({
      disableParsingRawHTML: true,
      ignoreHTMLBlocks: true,
      disableFrontmatter: true,
      tagfilter: true,
      forceBlock: true,
      slugify: (input: string, defaultFn: (input: string) => string) => `md-${prefix}-${defaultFn(input)}`,
    }),
    [prefix],
  );
  return (
    <div className="markdown rendered" aria-label={props.label}>
      <Markdown options={options}>{props.text}</Markdown>
    </div>
  );
}

/** A risk level as a chip coloured like a skill class. */
function RiskChip(props: { value: string }) {
  const kind = props.value === "high" ? "class-dangerous" : props.value === "medium" ? "class-mutating" : "class-safe";
  return (
    <Chip kind={kind} title="risk_level">
      risk {props.value || "low"}
    </Chip>
  );
}

/** A short comma list with "+N more" past `max` entries. */
function shortList(items: string[], max = 5): string {
  if (!items.length) return "none";
  return items.length > max ? `${items.slice(0, max).join(", ")} +${items.length - max} more` : items.join(", ");
}

/** The playbooks page: list and problems on the left, the chosen playbook on the right. */
export function PlaybooksPage() {
  const { api, user } = useSession();
  const path = usePath();
  const selected = segment(path, 1);
  const [list, setList] = useState<ListPlaybooksResponse | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [filter, setFilter] = useState("");
  const [reloading, setReloading] = useState(false);
  const [reload, setReload] = useState<ReloadResponse | null>(null);
  const [reloadError, setReloadError] = useState<unknown>(null);
  const admin = can(user).admin;

  const load = useCallback(async () => {
    try {
      const res = await api.playbooks.listPlaybooks({});
      setList(res);
      setError(null);
    } catch (err) {
      setError(err);
    }
  }, [api]);

  useEffect(() => {
    void load();
  }, [load]);

  const doReload = async () => {
    setReloading(true);
    setReload(null);
    setReloadError(null);
    try {
      setReload(await api.playbooks.reload({}));
    } catch (err) {
      setReloadError(err);
    } finally {
      setReloading(false);
      await load();
    }
  };

  const shown = useMemo(() => {
    const f = filter.trim().toLowerCase();
    return (list?.playbooks ?? []).filter((p) => !f || [p.name, p.displayName, p.description, p.category, ...p.tags, ...p.triggers, ...p.allowedTools].join(" ").toLowerCase().includes(f));
  }, [list, filter]);
  const skipped = list?.skipped ?? [];
  const isLoaded = Boolean(list?.playbooks.some((p) => p.name === selected));
  const skippedSelected = skipped.find((s) => s.name === selected);

  return (
    <>
      <h1>Playbooks</h1>
      <ErrorNote error={error} />
      <section aria-label="Reload" className="pb-reload">
        <div className="row">
          <button type="button" onClick={doReload} disabled={!admin || reloading} aria-describedby="pb-reload-help">
            {reloading ? "Reloading…" : "Reload playbooks"}
          </button>
          <span id="pb-reload-help" className="help" data-testid="reload-help">
            {admin
              ? "Reads the playbook directories again and swaps in the new set at once; a set without generic_oncall is refused and the current one stays."
              : `Only admins may reload playbooks; you are ${roleName(user.role)}.`}
          </span>
        </div>
        <div aria-live="polite">
          <ErrorNote error={reloadError}>Reload refused: </ErrorNote>
          {reload ? <ReloadReport res={reload} /> : null}
        </div>
      </section>
      <div className="split">
        <section aria-label="Playbook list" className="pb-col">
          <label htmlFor="playbook-filter">Filter</label>
          <input id="playbook-filter" type="search" value={filter} onChange={(e) => setFilter(e.target.value)} placeholder="name, trigger, tool…" />
          <p className="muted" role="status" data-testid="playbook-count">
            {list === null ? "Loading…" : `${shown.length} of ${list.playbooks.length} playbooks loaded${skipped.length ? `, ${skipped.length} skipped` : ""} · generation ${String(list.generation)}`}
          </p>
          <ul className="list" data-testid="playbook-list">
            {shown.map((p) => (
              <li key={p.name}>
                <button type="button" className="item" aria-pressed={p.name === selected} onClick={() => navigate(`/playbooks/${encodeURIComponent(p.name)}`)} data-playbook={p.name}>
                  <span className="name">{p.displayName || p.name}</span> <code>{p.name}</code>
                  <span className="chips">
                    <Chip kind="online">loaded</Chip>
                    {p.category ? <Chip>{p.category}</Chip> : null}
                    <RiskChip value={p.riskLevel} />
                    <Chip kind={p.source === "builtin" ? "scope-manager" : "scope-edge"}>{p.source || "external"}</Chip>
                  </span>
                  <span className="muted pb-desc">{p.description}</span>
                  <span className="pb-facts">
                    <span>
                      <strong>Triggers:</strong> {shortList(p.triggers)}
                    </span>
                    <span>
                      <strong>Tools:</strong> {shortList(p.allowedTools)}
                    </span>
                    <span className="muted mono pb-file">{p.file}</span>
                  </span>
                </button>
              </li>
            ))}
            {skipped.map((s) => (
              <li key={`skipped-${s.name}-${s.file}`}>
                <button type="button" className="item" aria-pressed={s.name === selected} onClick={() => navigate(`/playbooks/${encodeURIComponent(s.name)}`)} data-playbook={s.name} data-state="skipped">
                  <span className="name">{s.name}</span>{" "}
                  <span className="chips">
                    <Chip kind="offline">skipped</Chip>
                  </span>
                  <span className="muted">{s.reason}</span>
                  <span className="muted mono pb-file">{s.file}</span>
                </button>
              </li>
            ))}
          </ul>
          {list ? <ProblemsView problems={list.problems} title="Problems of the last load" testId="load-problems" /> : null}
        </section>
        <section aria-label="Playbook" className="pb-col">
          {isLoaded ? (
            <PlaybookView key={`${selected}-${String(list?.generation)}`} name={selected} />
          ) : skippedSelected ? (
            <SkippedView s={skippedSelected} />
          ) : (
            <p className="muted">{selected && list ? `No loaded playbook "${selected}".` : "Choose a playbook to read it."}</p>
          )}
        </section>
      </div>
    </>
  );
}

/** Problems (refused files and warnings) with file, field and rule; errors first. */
function ProblemsView(props: { problems: PlaybookProblem[]; title: string; testId: string }) {
  const problems = [...props.problems].sort((a, b) => (a.severity === b.severity ? 0 : a.severity === "error" ? -1 : 1));
  const errors = problems.filter((p) => p.severity === "error").length;
  const headingId = useId();
  return (
    <section aria-labelledby={headingId} data-testid={props.testId} className="pb-problems">
      <h2 id={headingId}>
        {props.title}{" "}
        <span className="muted">
          ({errors} refused file{errors === 1 ? "" : "s"}, {problems.length - errors} warning{problems.length - errors === 1 ? "" : "s"})
        </span>
      </h2>
      {problems.length === 0 ? (
        <p className="muted">None: every file loaded cleanly.</p>
      ) : (
        <ul className="pb-problem-list">
          {problems.map((p, i) => (
            <li key={i} data-severity={p.severity} className={p.severity === "error" ? "problem-error" : "problem-warning"}>
              <Chip kind={p.severity === "error" ? "class-dangerous" : "warn"}>{p.severity === "error" ? "refused" : "warning"}</Chip> <code className="pb-file">{p.file}</code>
              {p.field ? (
                <>
                  {" "}
                  field <code>{p.field}</code>
                </>
              ) : null}
              {p.rule ? <span className="muted"> (rule: {p.rule})</span> : null}
              <div>{p.message}</div>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/** What a reload reported. */
function ReloadReport(props: { res: ReloadResponse }) {
  const r = props.res;
  const names = (label: string, list: string[]) =>
    list.length ? (
      <li>
        <strong>{label}:</strong> {list.join(", ")}
      </li>
    ) : null;
  return (
    <section className="result ok" aria-label="Reload result" data-testid="reload-result" role="status">
      <p className="result-head">
        <strong>Reloaded</strong>
        <span className="muted">generation {String(r.generation)}</span>
        <span>
          {r.loaded.length} playbook{r.loaded.length === 1 ? "" : "s"} loaded
        </span>
      </p>
      <ul>
        {names("Added", r.added)}
        {names("Changed", r.changed)}
        {names("Removed", r.removed)}
        {!r.added.length && !r.changed.length && !r.removed.length ? <li>No playbook was added, changed or removed.</li> : null}
        <li>
          <strong>Loaded:</strong> {r.loaded.join(", ")}
        </li>
        {r.skipped.map((s) => (
          <li key={`${s.name}-${s.file}`}>
            <strong>Skipped</strong> {s.name}: {s.reason}
          </li>
        ))}
      </ul>
      <ProblemsView problems={r.problems} title="Problems of this reload" testId="reload-problems" />
    </section>
  );
}

function SkippedView(props: { s: SkippedPlaybook }) {
  return (
    <article aria-labelledby="pb-title">
      <h2 id="pb-title">
        <code>{props.s.name}</code> <Chip kind="offline">skipped</Chip>
      </h2>
      <p>Not loaded on purpose: {props.s.reason}</p>
      <p className="muted mono">{props.s.file}</p>
    </article>
  );
}

/** One playbook read with GetPlaybook. */
function PlaybookView(props: { name: string }) {
  const { api } = useSession();
  const [pb, setPb] = useState<Playbook | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    let live = true;
    api.playbooks.getPlaybook({ name: props.name }).then(
      (res) => live && setPb(res.playbook ?? null),
      (err) => live && setError(err),
    );
    return () => {
      live = false;
    };
  }, [api, props.name]);

  if (error) return <ErrorNote error={error} />;
  if (!pb)
    return (
      <p className="muted" role="status">
        Loading {props.name}…
      </p>
    );
  const facts: Array<[string, ReactNode]> = [
    ["Category", pb.category || "—"],
    ["Risk level", <RiskChip key="risk" value={pb.riskLevel} />],
    ["Platforms", pb.platforms.join(", ") || "any"],
    ["Tags", pb.tags.join(", ") || "none"],
    ["Triggers", pb.triggers.length ? pb.triggers.map((t) => <Chip key={t}>{t}</Chip>) : "none (the router reaches it by its description or as the fallback)"],
    [
      "Allowed tools",
      pb.allowedTools.length ? (
        <ul className="inline-list" data-testid="allowed-tools">
          {pb.allowedTools.map((t) => (
            <li key={t}>
              <code>{t}</code>
            </li>
          ))}
        </ul>
      ) : (
        "none"
      ),
    ],
    ["Source", `${pb.source}`],
    ["File", <code key="file">{pb.file}</code>],
  ];
  if (pb.license) facts.push(["License", pb.license]);
  if (pb.metadata && Object.keys(pb.metadata).length) facts.push(["Metadata", <pre key="md" className="output">{json(pb.metadata)}</pre>]);
  return (
    <article aria-labelledby="pb-title" data-testid="playbook">
      <h2 id="pb-title">
        {pb.displayName || pb.name} <code>{pb.name}</code>
      </h2>
      <p>{pb.description}</p>
      <dl className="pb-facts-dl">
        {facts.map(([k, v]) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd>{v}</dd>
          </div>
        ))}
      </dl>
      <h3>Fallback steps</h3>
      {pb.fallbackSteps.length ? (
        <>
          <p className="help">Run in this order when no model is configured; placeholders are filled from the alert text, and a step whose value is missing is skipped.</p>
          <ol className="pb-steps" data-testid="fallback-steps">
            {pb.fallbackSteps.map((s, i) => (
              <li key={i}>
                <code>{s.tool}</code> <code className="muted">{JSON.stringify(s.args ?? {})}</code>
                {s.note ? <div className="muted">{s.note}</div> : null}
              </li>
            ))}
          </ol>
        </>
      ) : (
        <p className="muted">None: without a model this playbook gathers no evidence.</p>
      )}
      <h3>Body</h3>
      <SafeMarkdown text={pb.body} label={`${pb.name} body`} />
    </article>
  );
}
