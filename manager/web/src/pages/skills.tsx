/**
 * /skills (L1): every skill in a compact table grouped by category (key, class, scope, a one-line
 * summary; the full description on demand), and the selected skill's run form (skill-runner.tsx).
 */
import { Fragment, useEffect, useMemo, useState } from "react";
import type { Metadata } from "../../../../proto/gen/ongrid/v1/skill_pb.ts";
import type { Edge } from "../../../../proto/gen/ongrid/v1/edge_service_pb.ts";
import { useSession } from "../session.tsx";
import { navigate, segment, usePath } from "../router.tsx";
import { ClassBadge, ErrorNote, ScopeChip, Chip } from "../components.tsx";
import { SkillRunner } from "./skill-runner.tsx";

/** A description's first sentence (or line), for the one-line summary. */
export function summaryOf(description: string): string {
  const text = description.trim();
  const line = text.split("\n")[0];
  const m = /^(.+?[.!?])(\s|$)/.exec(line);
  return m ? m[1] : line;
}

/** The skills page: the table, and the selected skill's form. */
export function SkillsPage() {
  const { api } = useSession();
  const path = usePath();
  const selected = segment(path, 1);
  const [skills, setSkills] = useState<Metadata[] | null>(null);
  const [edges, setEdges] = useState<Edge[]>([]);
  const [error, setError] = useState<unknown>(null);
  const [filter, setFilter] = useState("");
  const [open, setOpen] = useState<ReadonlySet<string>>(new Set());

  useEffect(() => {
    let live = true;
    Promise.all([api.skills.listSkills({}), api.edges.listEdges({})]).then(
      ([s, e]) => {
        if (!live) return;
        setSkills(s.skills);
        setEdges(e.edges);
      },
      (err) => live && setError(err),
    );
    return () => {
      live = false;
    };
  }, [api]);

  const shown = useMemo(() => {
    const f = filter.trim().toLowerCase();
    return (skills ?? []).filter((s) => !f || `${s.key} ${s.name} ${s.category} ${s.description}`.toLowerCase().includes(f));
  }, [skills, filter]);
  // Grouped by category (the uncategorised last), each group by key.
  const groups = useMemo(() => {
    const by = new Map<string, Metadata[]>();
    for (const s of shown) {
      const c = s.category || "other";
      by.set(c, [...(by.get(c) ?? []), s]);
    }
    return [...by.entries()].sort(([a], [b]) => (a === "other" ? 1 : b === "other" ? -1 : a.localeCompare(b)));
  }, [shown]);
  const skill = skills?.find((s) => s.key === selected);
  const toggle = (key: string) =>
    setOpen((prev) => {
      const next = new Set(prev);
      if (!next.delete(key)) next.add(key);
      return next;
    });

  return (
    <>
      <h1>Skills</h1>
      <ErrorNote error={error} />
      <div className="split skills-split">
        <section aria-label="Skill list" className="skill-list">
          <label htmlFor="skill-filter">Filter</label>
          <input id="skill-filter" type="search" value={filter} onChange={(e) => setFilter(e.target.value)} placeholder="key, category, words…" />
          <p className="muted" role="status">
            {skills === null ? "Loading…" : `${shown.length} of ${skills.length} skills`}
          </p>
          <div className="table-wrap skill-table-wrap">
            <table className="skills" data-testid="skill-table">
              <thead>
                <tr>
                  <th scope="col">Skill</th>
                  <th scope="col">Class</th>
                  <th scope="col" className="skill-scope">
                    Scope
                  </th>
                  <th scope="col" className="skill-summary">
                    Summary
                  </th>
                  <th scope="col">
                    <span className="sr-only">Description</span>
                  </th>
                </tr>
              </thead>
              {groups.map(([category, list]) => (
                <tbody key={category} data-category={category}>
                  <tr className="skill-group">
                    <th scope="colgroup" colSpan={5}>
                      {category} <span className="muted">({list.length})</span>
                    </th>
                  </tr>
                  {list.map((s) => {
                    const expanded = open.has(s.key);
                    const detailId = `skill-detail-${s.key}`;
                    return (
                      <Fragment key={s.key}>
                        <tr data-row={s.key} className={s.key === selected ? "selected" : undefined}>
                          <td>
                            <button type="button" className="skill-key" aria-pressed={s.key === selected} onClick={() => navigate(`/skills/${encodeURIComponent(s.key)}`)} data-skill={s.key} title={s.name}>
                              {s.key}
                            </button>
                          </td>
                          <td>
                            <ClassBadge value={s.class} />
                          </td>
                          <td className="skill-scope">
                            <ScopeChip value={s.scope} />
                          </td>
                          <td className="skill-summary" title={s.description}>
                            {summaryOf(s.description)}
                          </td>
                          <td>
                            <button type="button" className="secondary disclose" aria-expanded={expanded} aria-controls={expanded ? detailId : undefined} aria-label={`Description of ${s.key}`} onClick={() => toggle(s.key)}>
                              {expanded ? "−" : "+"}
                            </button>
                          </td>
                        </tr>
                        {expanded ? (
                          <tr className="skill-detail" id={detailId} data-testid="skill-detail">
                            <td colSpan={5}>
                              <strong>{s.name || s.key}</strong>
                              {s.dynamicRisk ? (
                                <>
                                  {" "}
                                  <Chip kind="warn" title="The class is decided per call from the params">
                                    risk from params
                                  </Chip>
                                </>
                              ) : null}
                              <p>{s.description}</p>
                            </td>
                          </tr>
                        ) : null}
                      </Fragment>
                    );
                  })}
                </tbody>
              ))}
            </table>
          </div>
        </section>
        <section aria-label="Run a skill">
          {skill ? <SkillRunner key={skill.key} skill={skill} edges={edges} /> : <p className="muted">{selected && skills ? `No skill "${selected}".` : "Choose a skill to see its form."}</p>}
        </section>
      </div>
    </>
  );
}
