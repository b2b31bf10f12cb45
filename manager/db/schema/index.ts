/** Every table of the manager's database; drizzle-kit and the client read the schema from here. */
export * from "./tool-calls.ts";
export * from "./edges.ts";
export * from "./identity.ts";
export * from "./approvals.ts";
export * from "./credentials.ts";
export * from "./route-decisions.ts";
export * from "./agent-sessions.ts";
export * from "./knowledge.ts";
export * from "./incidents.ts";
export * from "./topology.ts";
export * from "./managers.ts";
