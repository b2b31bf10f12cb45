/** A small path router over the History API: the console has a handful of fixed pages. */
import { useEffect, useState, type MouseEvent, type ReactNode } from "react";

const listeners = new Set<() => void>();

/** Goes to a console path without reloading the page. */
export function navigate(path: string): void {
  if (path === window.location.pathname + window.location.search) return;
  window.history.pushState(null, "", path);
  for (const l of listeners) l();
}

/** Re-renders with `read()` of the location whenever the console navigates or history moves. */
function useLocationPart(read: () => string): string {
  const [value, setValue] = useState(read);
  useEffect(() => {
    const update = () => setValue(read());
    listeners.add(update);
    window.addEventListener("popstate", update);
    return () => {
      listeners.delete(update);
      window.removeEventListener("popstate", update);
    };
  }, [read]);
  return value;
}

const readPath = () => window.location.pathname;
const readSearch = () => window.location.search;

/** The current path (and re-renders when it changes). */
export function usePath(): string {
  return useLocationPart(readPath);
}

/** The current query string, "?a=b" or "" (and re-renders when it changes). */
export function useSearch(): string {
  return useLocationPart(readSearch);
}

/** The path's segment at `index` (0-based after the leading "/"), decoded; a malformed escape is kept as written. */
export function segment(path: string, index: number): string {
  const raw = path.split("/")[index + 1] ?? "";
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** An in-app link: a real <a href> (keyboard, middle-click) that navigates without a reload. */
export function Link(props: { to: string; children: ReactNode; className?: string; current?: boolean }) {
  const onClick = (e: MouseEvent<HTMLAnchorElement>) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(props.to);
  };
  return (
    <a href={props.to} onClick={onClick} className={props.className} aria-current={props.current ? "page" : undefined}>
      {props.children}
    </a>
  );
}
