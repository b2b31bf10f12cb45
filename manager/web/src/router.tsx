/** A small path router over the History API: the console has a handful of fixed pages. */
import { useEffect, useState, type MouseEvent, type ReactNode } from "react";

const listeners = new Set<() => void>();

/** Goes to a console path without reloading the page. */
export function navigate(path: string): void {
  if (path === window.location.pathname + window.location.search) return;
  window.history.pushState(null, "", path);
  for (const l of listeners) l();
}

/** The current path (and re-renders when it changes). */
export function usePath(): string {
  const [path, setPath] = useState(window.location.pathname);
  useEffect(() => {
    const update = () => setPath(window.location.pathname);
    listeners.add(update);
    window.addEventListener("popstate", update);
    return () => {
      listeners.delete(update);
      window.removeEventListener("popstate", update);
    };
  }, []);
  return path;
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
