/** The manager's version, reported to edges, in logs and by `ongrid --version` (a module of its own, so the CLI reads it without loading the manager). */
export const MANAGER_VERSION = "0.1.0";
