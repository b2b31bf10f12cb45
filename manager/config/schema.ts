/** The manager's configuration: one JSON Schema that is both the validator and the documentation (docs/config.md). */
import { CREDENTIAL_NAME_PATTERN } from "../../skill/credential.ts";

/** Every config key, its type, default and the environment variable that overrides it. */
export const CONFIG_SCHEMA = {
  type: "object",
  additionalProperties: false,
  properties: {
    server: {
      type: "object",
      additionalProperties: false,
      properties: {
        host: { type: "string", minLength: 1, default: "127.0.0.1", description: "Address to listen on.", env: "ONGRID_HOST" },
        port: { type: "integer", minimum: 0, maximum: 65535, default: 7070, description: "Port for Connect, gRPC, gRPC-Web and the console (0 picks a free port).", env: "ONGRID_PORT" },
        tls_cert: { type: "string", default: "", description: "PEM certificate file; with tls_key, serves TLS (HTTP/2 and HTTP/1.1 by ALPN).", env: "ONGRID_TLS_CERT" },
        tls_key: { type: "string", default: "", description: "PEM private key file for tls_cert.", env: "ONGRID_TLS_KEY" },
        require_tls: { type: "boolean", default: false, description: "Refuse to run without TLS: the manager does not start unless tls_cert and tls_key are set; the CLI refuses an http:// manager URL (and the edge does with ONGRID_REQUIRE_TLS or --require-tls), and the manager forwards no call to a peer manager that advertises an http:// URL. (With TLS served, a plaintext connection to the port is always refused with a message saying so.)", env: "ONGRID_REQUIRE_TLS" },
        max_request_bytes: { type: "integer", minimum: 1024, maximum: 268435456, default: 1048576, description: "Largest accepted request message; bigger ones are refused with RESOURCE_EXHAUSTED.", env: "ONGRID_MAX_REQUEST_BYTES" },
        console_dir: { type: "string", default: "", description: "Directory of the built web console (index.html + assets/); empty serves dist/console, which `npm run build:web` and `npm start` build.", env: "ONGRID_CONSOLE_DIR" },
        auth_failures_per_minute: { type: "integer", minimum: 1, maximum: 100000, default: 20, description: "Failed authentications from one peer address within server.auth_failure_window after which every request from that address (even with a valid token) is refused with RESOURCE_EXHAUSTED until the window passes.", env: "ONGRID_AUTH_FAILURES_PER_MINUTE" },
        header_timeout: { type: "string", default: "10s", description: "An HTTP/1.1 request's headers must arrive within this, or the connection is closed (slow-header floods).", env: "ONGRID_HEADER_TIMEOUT", format: "duration" },
        request_timeout: { type: "string", default: "60s", description: "An HTTP/1.1 request (headers and body) must arrive within this; so must an HTTP/2 stream's request, or the stream is reset with CANCEL (an answered stream, such as an edge's tunnel, is not).", env: "ONGRID_REQUEST_TIMEOUT", format: "duration" },
        max_concurrent_streams: { type: "integer", minimum: 1, maximum: 100000, default: 1000, description: "HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS: streams one connection may have open at once (an edge's tunnel is one).", env: "ONGRID_MAX_CONCURRENT_STREAMS" },
        max_incomplete_streams: { type: "integer", minimum: 1, maximum: 100000, default: 100, description: "HTTP/2 streams one connection may hold whose request has not fully arrived (no END_STREAM) and that nothing has answered yet; one more and the connection is closed with GOAWAY ENHANCE_YOUR_CALM. An edge's tunnel counts only until it is answered.", env: "ONGRID_MAX_INCOMPLETE_STREAMS" },
        max_connections_per_address: { type: "integer", minimum: 0, maximum: 1000000, default: 4096, description: "Open connections from one address; more are closed at once (0: no cap). Raise it when many edges share one address (NAT).", env: "ONGRID_MAX_CONNECTIONS_PER_ADDRESS" },
        auth_failure_window: { type: "string", default: "1m", description: "Sliding window over which server.auth_failures_per_minute counts failed authentications per address.", env: "ONGRID_AUTH_FAILURE_WINDOW", format: "duration" },
        manager_id: { type: "string", default: "", pattern: "^$|^[a-z0-9][a-z0-9.-]{0,62}$", description: "This manager's id among the managers sharing the database (lower case letters, digits, '.', '-'); empty: the host name and a random suffix, new at each start, so two managers on one host never share one.", env: "ONGRID_MANAGER_ID" },
        advertise_url: { type: "string", default: "", pattern: "^$|^https?://", description: "The URL other managers and clients reach this manager at, recorded with its lease; empty: the listener's own URL.", env: "ONGRID_ADVERTISE_URL" },
        lease_ttl: { type: "string", default: "30s", description: "How long this manager's lease in the database lasts without renewal (it renews every third of it); once it lapses the other managers treat it as dead and show its edges offline. Between 3s and 10m.", env: "ONGRID_LEASE_TTL", format: "duration" },
        cluster_secret: { type: "string", default: "", pattern: "^$|^[\\x21-\\x7e]{32,256}$", description: "The credential managers sharing the database prove to each other on the peer service (32 to 256 printable characters, the same on every manager; never sent: each request carries an HMAC of it). Empty: a random one the first manager wrote into the database.", env: "ONGRID_CLUSTER_SECRET" },
        peer_ca: { type: "string", default: "", description: "PEM file of the CA that signed the other managers' certificates, for the peer service over TLS; empty: the certificates in server.tls_cert (enough when the managers share one self-signed certificate, or when the file holds the chain up to the CA).", env: "ONGRID_PEER_CA" },
        presence_poll: { type: "string", default: "1s", description: "How often this manager reads which edges the other managers hold (it also reads at once when one of them announces a change); 100ms to 1m.", env: "ONGRID_PRESENCE_POLL", format: "duration" },
        token_cache: { type: "string", default: "1s", description: "How long the lookup of an API token (its row and its user) is reused before the database is asked again; every check (revoked, expired, user disabled) still runs on each request against it. Revocations and user changes made through this manager apply at once; made through another manager sharing the database, within this time. 0s looks the token up on every request; at most 5m.", env: "ONGRID_TOKEN_CACHE", format: "duration" },
      },
    },
    tunnel: {
      type: "object",
      additionalProperties: false,
      properties: {
        heartbeat_interval: { type: "string", default: "5s", description: "How often manager and edge send heartbeats; a peer silent for 3 intervals is dead.", env: "ONGRID_HEARTBEAT_INTERVAL", format: "duration" },
        max_frame_bytes: { type: "integer", minimum: 65536, maximum: 67108864, default: 4194304, description: "Largest tunnel frame accepted from an edge.", env: "ONGRID_TUNNEL_MAX_FRAME_BYTES" },
        hello_timeout: { type: "string", default: "10s", description: "How long an edge's tunnel may stay open without its hello, and without the inventory the manager asked it for (when its hello named an inventory the manager does not hold), before it is ended with INVALID_ARGUMENT (100ms to 1h).", env: "ONGRID_TUNNEL_HELLO_TIMEOUT", format: "duration" },
      },
    },
    data_dir: { type: "string", minLength: 1, default: "./data", description: "Directory for the embedded PGlite database (used when database_url is empty).", env: "ONGRID_DATA_DIR" },
    database_url: { type: "string", default: "", pattern: "^$|^postgres(ql)?://", description: "PostgreSQL URL (postgres://user:pass@host:port/db); empty uses embedded PGlite in data_dir.", env: "DATABASE_URL" },
    log_level: { type: "string", enum: ["trace", "debug", "info", "warn", "error", "fatal", "silent"], default: "info", description: "Log level (logs are JSON lines on stderr).", env: "ONGRID_LOG_LEVEL" },
    packs: {
      type: "object",
      additionalProperties: false,
      properties: {
        dirs: { type: "string", default: "", description: "Directories of subprocess skill packs (skill.json + executable) loaded as manager skills, separated by ':'; rescanned on change, on SIGHUP and by `ongrid packs rescan`.", env: "ONGRID_PACK_DIRS" },
        watch: { type: "boolean", default: true, description: "Rescan packs.dirs when a file under them changes (inotify); false leaves SIGHUP and `ongrid packs rescan`.", env: "ONGRID_PACK_WATCH" },
        local_edge_dirs: { type: "string", default: "", description: "Pack directories for the local edge that `--local-edge` starts, separated by ':' (host skills).", env: "ONGRID_LOCAL_EDGE_PACK_DIRS" },
      },
    },
    gate: {
      type: "object",
      additionalProperties: false,
      properties: {
        default_mode: { type: "string", enum: ["READ_ONLY", "NORMAL", "ASK_DESTRUCTIVE", "BYPASS"], default: "NORMAL", description: "Permission mode of calls that name none (READ_ONLY, NORMAL, ASK_DESTRUCTIVE; BYPASS needs gate.allow_bypass).", env: "ONGRID_GATE_MODE" },
        allow_bypass: { type: "boolean", default: false, description: "Allow BYPASS mode (development only: non-safe calls run without approval; every such call is logged at warn level).", env: "ONGRID_GATE_ALLOW_BYPASS" },
        high_risk_tools: { type: "string", default: "kubernetes_action", description: "Comma-separated skill keys denied in NORMAL mode and sent to approval in ASK_DESTRUCTIVE (guardrail layer 2). The default lists cluster-destroying tools only; a mutating tool that is not listed (restart_service) goes to human approval in NORMAL.", env: "ONGRID_GATE_HIGH_RISK_TOOLS" },
        notification_tools: { type: "string", default: "send_message", description: "Comma-separated skill keys that notify people (send a message, page); denied unless gate.allow_notifications.", env: "ONGRID_GATE_NOTIFICATION_TOOLS" },
        allow_notifications: { type: "boolean", default: false, description: "Let notification tools through the guardrail (they still follow their class).", env: "ONGRID_GATE_ALLOW_NOTIFICATIONS" },
      },
    },
    approvals: {
      type: "object",
      additionalProperties: false,
      properties: {
        ttl: { type: "string", default: "1h", description: "How long an approval request waits for its approvers before it expires.", env: "ONGRID_APPROVAL_TTL", format: "duration" },
        sop_trusted_keys: { type: "string", default: "", description: "PEM public keys (RSA) whose SOP signatures are trusted, ':'-separated file paths; empty means no dangerous call can run.", env: "ONGRID_SOP_TRUSTED_KEYS" },
      },
    },
    credentials: {
      type: "object",
      additionalProperties: false,
      properties: {
        key: { type: "string", default: "", description: "Base64 of 32 random bytes: the AES-256-GCM key of the credential store (prefer key_file or the environment).", env: "ONGRID_CREDENTIALS_KEY" },
        key_file: { type: "string", default: "", description: "File holding the credential key (base64 of 32 bytes); used when credentials.key is empty.", env: "ONGRID_CREDENTIALS_KEY_FILE" },
      },
    },
    playbooks: {
      type: "object",
      additionalProperties: false,
      properties: {
        dirs: { type: "string", default: "", description: "External playbook directories (each holding <name>/SKILL.md), separated by ':'; loaded after the built-in manager/playbooks.", env: "ONGRID_PLAYBOOK_DIRS" },
        disabled: { type: "string", default: "", description: "Comma-separated playbook names not to load (generic_oncall cannot be disabled: the manager refuses to start).", env: "ONGRID_PLAYBOOKS_DISABLED" },
        watch: { type: "boolean", default: true, description: "Reload playbooks when a file under their directories changes; false leaves SIGHUP and `ongrid playbooks reload`.", env: "ONGRID_PLAYBOOK_WATCH" },
      },
    },
    model: {
      type: "object",
      additionalProperties: false,
      properties: {
        base_url: { type: "string", default: "", pattern: "^$|^https?://", description: "OpenAI-compatible API base URL, e.g. http://127.0.0.1:8000/v1; empty: no model, the router and agent use rules and fallback steps.", env: "ONGRID_MODEL_BASE_URL" },
        model: { type: "string", default: "", description: "Model name sent with each request; empty: no model.", env: "ONGRID_MODEL" },
        api_key: { type: "string", default: "", description: "API key (prefer api_key_file or the environment); never logged.", env: "ONGRID_MODEL_API_KEY" },
        api_key_file: { type: "string", default: "", description: "File holding the API key; used when model.api_key is empty.", env: "ONGRID_MODEL_API_KEY_FILE" },
        timeout: { type: "string", default: "30s", description: "Deadline of one model request (each retry gets its own).", env: "ONGRID_MODEL_TIMEOUT", format: "duration" },
        max_retries: { type: "integer", minimum: 0, maximum: 10, default: 2, description: "Retries of a request that failed with a connection error, 408, 409, 429 or 5xx.", env: "ONGRID_MODEL_MAX_RETRIES" },
        structured_output: { type: "string", enum: ["auto", "json_schema", "json_object"], default: "auto", description: "How structured answers are asked for: json_schema response format, json_object (JSON mode + validation), or auto (json_schema, falling back to json_object when the server refuses it).", env: "ONGRID_MODEL_STRUCTURED_OUTPUT" },
      },
    },
    agent: {
      type: "object",
      additionalProperties: false,
      properties: {
        max_steps: { type: "integer", minimum: 1, maximum: 100, default: 12, description: "Most tool calls the executor makes in one diagnosis session.", env: "ONGRID_AGENT_MAX_STEPS" },
        max_duration: { type: "string", default: "5m", description: "Longest a diagnosis session runs before it writes its report with what it has.", env: "ONGRID_AGENT_MAX_DURATION", format: "duration" },
        tool_list: { type: "string", enum: ["on_demand", "full"], default: "on_demand", description: "How the executor shows the model its tools: on_demand lists them as a catalogue (name, first sentence, class, scope) in a load_tools function and sends a tool's full definition once the model loads it or the plan names it; full sends every allowed tool's definition on every turn. Either way only tools the gate allows are shown, and the gate decides each call.", env: "ONGRID_AGENT_TOOL_LIST" },
      },
    },
    router: {
      type: "object",
      additionalProperties: false,
      properties: {
        recall_dir: { type: "string", default: "", description: "Directory of past diagnoses (Markdown pages, optional frontmatter title/summary/playbook) the router recalls from; empty: no recall.", env: "ONGRID_ROUTER_RECALL_DIR" },
        recall_limit: { type: "integer", minimum: 0, maximum: 20, default: 3, description: "How many past diagnoses the router prompt holds.", env: "ONGRID_ROUTER_RECALL_LIMIT" },
        recall_level: { type: "string", enum: ["index", "full"], default: "index", description: "index: one line per recalled page in the router prompt; full: whole pages (larger prompts).", env: "ONGRID_ROUTER_RECALL_LEVEL" },
      },
    },
    skills: {
      type: "object",
      additionalProperties: false,
      properties: {
        default_timeout: { type: "string", default: "30s", description: "Deadline of a call that names none (duration: 500ms, 30s, 5m, 1h).", env: "ONGRID_SKILL_TIMEOUT", format: "duration" },
        max_timeout: { type: "string", default: "10m", description: "Largest deadline a caller may ask for.", env: "ONGRID_SKILL_MAX_TIMEOUT", format: "duration" },
        output_cap_bytes: { type: "integer", minimum: 256, maximum: 67108864, default: 65536, description: "Outputs larger than this (as JSON, in bytes) are truncated with a marker.", env: "ONGRID_OUTPUT_CAP_BYTES" },
        max_calls_per_user: { type: "integer", minimum: 1, maximum: 100000, default: 256, description: "Most calls one user has running at once; a fan-out counts as one call, a diagnosis session's tool calls count to the user it runs for, a call that needed approval does not count (waiting or running); more are refused with RESOURCE_EXHAUSTED and audited.", env: "ONGRID_SKILLS_MAX_CALLS_PER_USER" },
        web_search: {
          type: "object",
          additionalProperties: false,
          properties: {
            url: { type: "string", default: "http://127.0.0.1:8888/search", pattern: "^$|^https?://", description: "SearXNG-compatible JSON search endpoint; empty disables web_search.", env: "ONGRID_WEB_SEARCH_URL" },
            timeout: { type: "string", default: "10s", description: "Deadline of one search request.", env: "ONGRID_WEB_SEARCH_TIMEOUT", format: "duration" },
            max_results: { type: "integer", minimum: 1, maximum: 50, default: 10, description: "Upper bound on results returned per query.", env: "ONGRID_WEB_SEARCH_MAX_RESULTS" },
          },
        },
        exec: {
          type: "object",
          additionalProperties: false,
          properties: {
            read_roots: { type: "string", default: "/var/log", pattern: "^(/[^:]*)(:/[^:]*)*$", description: "':'-separated absolute directories whose files a read-only exec command (cat, head, tail, grep, …) may read without approval, besides a short list of non-secret system files; the gate classifies with these, so keep them equal to the edges' --exec-read-root.", env: "ONGRID_EXEC_READ_ROOTS" },
            allow_file: { type: "string", default: "", description: "An exec allowlist file (YAML or JSON; docs/security.md, \"Adding to the exec allowlist\") that adds commands, and options of built-in commands, to what a read-only exec call may run without approval; it can only add, and never makes a wrapper, writer or destroyer safe. Give the edges the same file (--exec-allow-file). Empty: the built-in allowlist.", env: "ONGRID_EXEC_ALLOW_FILE" },
            safe_run_as: { type: "string", default: "nobody", pattern: "^$|^[a-z_][a-z0-9_.-]*(:[a-z_][a-z0-9_.-]*)?$", description: "The unprivileged user (user or user:group) the local edge runs read-only exec commands as when it runs as root; \"\" runs them as the edge's own user.", env: "ONGRID_EXEC_SAFE_RUN_AS" },
          },
        },
        send_message: {
          type: "object",
          additionalProperties: false,
          properties: {
            webhook_url: { type: "string", default: "", pattern: "^$|^https?://", description: "Where send_message posts its JSON message (Slack-compatible {text}); empty: send_message fails with a hint. The tool is also a notification tool (gate.notification_tools).", env: "ONGRID_SEND_MESSAGE_WEBHOOK_URL" },
            timeout: { type: "string", default: "10s", description: "Deadline of one webhook post.", env: "ONGRID_SEND_MESSAGE_TIMEOUT", format: "duration" },
          },
        },
      },
    },
    knowledge: {
      type: "object",
      additionalProperties: false,
      properties: {
        dirs: { type: "string", default: "", description: "':'-separated directories of Markdown runbooks query_knowledge searches (with the stored diagnosis reports).", env: "ONGRID_KNOWLEDGE_DIRS" },
        watch: { type: "boolean", default: true, description: "Re-index knowledge.dirs when a file under them changes.", env: "ONGRID_KNOWLEDGE_WATCH" },
      },
    },
    topology: {
      type: "object",
      additionalProperties: false,
      properties: {
        refresh_interval: { type: "string", default: "5m", description: "How often the manager asks every edge for its sockets (host_sockets) and rebuilds the service topology (each edge call gated and audited as ongrid:topology); 0s: only on demand (get_topology with refresh). At least 10s when not 0s.", env: "ONGRID_TOPOLOGY_REFRESH_INTERVAL", format: "duration" },
        static_file: { type: "string", default: "", description: "A YAML file of topology nodes and links no edge can observe (a managed database, a SaaS API; docs/topology.md), merged into the graph as source static; re-read at each build. Empty: none.", env: "ONGRID_TOPOLOGY_STATIC_FILE" },
      },
    },
    observability: {
      type: "object",
      additionalProperties: false,
      properties: {
        prometheus_url: { type: "string", default: "", pattern: "^$|^https?://", description: "Prometheus HTTP API base URL (e.g. http://127.0.0.1:9090) for query_promql, query_alert_rules and correlate_incident; empty: those tools say it is not configured.", env: "ONGRID_PROMETHEUS_URL" },
        loki_url: { type: "string", default: "", pattern: "^$|^https?://", description: "Loki HTTP API base URL for query_logql.", env: "ONGRID_LOKI_URL" },
        tempo_url: { type: "string", default: "", pattern: "^$|^https?://", description: "Tempo HTTP API base URL for query_traceql.", env: "ONGRID_TEMPO_URL" },
        timeout: { type: "string", default: "15s", description: "Deadline of one request to Prometheus, Loki or Tempo.", env: "ONGRID_OBSERVABILITY_TIMEOUT", format: "duration" },
      },
    },
    mcp: {
      type: "object",
      additionalProperties: false,
      properties: {
        enabled: { type: "boolean", default: true, description: "Serve the Model Context Protocol at mcp.path on the manager's port (streamable HTTP; API token as Bearer). The gate, approvals, reach and audit apply to every MCP call as to any other.", env: "ONGRID_MCP_ENABLED" },
        path: { type: "string", pattern: "^/[A-Za-z0-9._~/-]*$", default: "/mcp", description: "URL path of the MCP endpoint.", env: "ONGRID_MCP_PATH" },
        approval_wait: { type: "string", default: "0s", description: "How long an MCP tool call that parked for approval waits (sending progress notifications) before answering \"pending approval\" to a client that did not ask for a task (0s: answer at once; at most 10m).", env: "ONGRID_MCP_APPROVAL_WAIT", format: "duration" },
        max_sessions_per_user: { type: "integer", minimum: 1, maximum: 10000, default: 16, description: "Open MCP sessions one user may hold on this manager; one more is refused (429) until one closes or idles out.", env: "ONGRID_MCP_MAX_SESSIONS_PER_USER" },
        session_idle_timeout: { type: "string", default: "30m", description: "An MCP session with no request for this long is closed (its id then answers 404, and the client starts a new one).", env: "ONGRID_MCP_SESSION_IDLE_TIMEOUT", format: "duration" },
        upstreams: {
          type: "array",
          default: [],
          maxItems: 64,
          description: "Upstream MCP servers (stdio or streamable HTTP) whose tools become manager skills mcp_<name>_<tool>, gated, audited and redacted like any other skill. Config file only (no environment variable); an entry's fields are under \"Upstream MCP servers\" below and in docs/mcp-upstreams.md.",
          items: {
            type: "object",
            additionalProperties: false,
            required: ["name"],
            properties: {
              name: { type: "string", pattern: "^[a-z][a-z0-9_]{0,31}$", message: "must be lower_snake: a lower-case letter, then lower-case letters, digits or '_', at most 32 characters" },
              command: { type: "array", minItems: 1, maxItems: 256, items: { type: "string", minLength: 1 }, message: "must be a non-empty array of strings" },
              env: { type: "object", propertyNames: { pattern: "^[A-Za-z_][A-Za-z0-9_]*$", message: "names must be environment variable names ([A-Za-z_][A-Za-z0-9_]*)" }, additionalProperties: { anyOf: [{ type: "string" }, { type: "object", additionalProperties: false, required: ["credential"], properties: { credential: { type: "string", pattern: CREDENTIAL_NAME_PATTERN }, prefix: { type: "string" } } }], message: 'must be a string or {credential: "<credential name>", prefix?: "<text>"}' }, message: "must be a mapping of variable names to values" },
              cwd: { type: "string", minLength: 1, message: "must be a non-empty string (a directory)" },
              url: { type: "string", pattern: "^https?://", message: "must be an http:// or https:// URL" },
              headers: { type: "object", propertyNames: { pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$", message: "names must be HTTP header names" }, additionalProperties: { anyOf: [{ type: "string" }, { type: "object", additionalProperties: false, required: ["credential"], properties: { credential: { type: "string", pattern: CREDENTIAL_NAME_PATTERN }, prefix: { type: "string" } } }], message: 'must be a string or {credential: "<credential name>", prefix?: "<text>"}' }, message: "must be a mapping of header names to values" },
              credential: { type: "string", pattern: CREDENTIAL_NAME_PATTERN, message: "must be the name of a stored credential (sent as Authorization: Bearer <value>)" },
              trust_annotations: { type: "boolean", default: false },
              classes: { type: "object", additionalProperties: { type: "string", enum: ["safe", "mutating", "dangerous"], message: "must be safe, mutating or dangerous" } },
              timeout: { type: "string", format: "duration" },
              enabled: { type: "boolean", default: true },
            },
          },
        },
      },
    },
    incidents: {
      type: "object",
      additionalProperties: false,
      properties: {
        auto_diagnose: { type: "boolean", default: false, description: "Start a diagnosis session (as the webhook's user) for each new firing incident.", env: "ONGRID_INCIDENTS_AUTO_DIAGNOSE" },
        max_auto_diagnoses: { type: "integer", minimum: 1, maximum: 100, default: 3, description: "Most diagnosis sessions incidents.auto_diagnose runs at once in this manager; a new firing incident beyond them gets none (logged, and said in the webhook's answer).", env: "ONGRID_INCIDENTS_MAX_AUTO_DIAGNOSES" },
      },
    },
  },
} as const;

/** The validated configuration. */
export interface ManagerConfig {
  server: { manager_id?: string; advertise_url?: string; lease_ttl?: string; cluster_secret?: string; peer_ca?: string; presence_poll?: string; host: string; port: number; tls_cert: string; tls_key: string; require_tls: boolean; max_request_bytes: number; console_dir: string; auth_failures_per_minute: number; auth_failure_window: string; token_cache: string; header_timeout?: string; request_timeout?: string; max_concurrent_streams?: number; max_incomplete_streams?: number; max_connections_per_address?: number };
  tunnel: { heartbeat_interval: string; max_frame_bytes: number; hello_timeout: string };
  data_dir: string;
  database_url: string;
  log_level: "trace" | "debug" | "info" | "warn" | "error" | "fatal" | "silent";
  packs: { dirs: string; watch: boolean; local_edge_dirs: string };
  gate: { default_mode: "READ_ONLY" | "NORMAL" | "ASK_DESTRUCTIVE" | "BYPASS"; allow_bypass: boolean; high_risk_tools: string; notification_tools: string; allow_notifications: boolean };
  approvals: { ttl: string; sop_trusted_keys: string };
  credentials: { key: string; key_file: string };
  playbooks: { dirs: string; disabled: string; watch: boolean };
  model: { base_url: string; model: string; api_key: string; api_key_file: string; timeout: string; max_retries: number; structured_output: "auto" | "json_schema" | "json_object" };
  agent: { max_steps: number; max_duration: string; tool_list: "on_demand" | "full" };
  router: { recall_dir: string; recall_limit: number; recall_level: "index" | "full" };
  skills: {
    default_timeout: string;
    max_timeout: string;
    output_cap_bytes: number;
    max_calls_per_user: number;
    web_search: { url: string; timeout: string; max_results: number };
    exec?: { read_roots: string; allow_file?: string; safe_run_as: string };
    send_message: { webhook_url: string; timeout: string };
  };
  knowledge: { dirs: string; watch: boolean };
  topology: { refresh_interval: string; static_file: string };
  observability: { prometheus_url: string; loki_url: string; tempo_url: string; timeout: string };
  incidents: { auto_diagnose: boolean; max_auto_diagnoses: number };
  mcp: { enabled: boolean; path: string; approval_wait: string; max_sessions_per_user: number; session_idle_timeout: string; upstreams: McpUpstreamConfig[] };
}

/** A value in an upstream's env or headers: the text itself, or a stored credential's value (after an optional prefix such as "Bearer "). */
export type McpSecretValue = string | { credential: string; prefix?: string };

/** One entry of mcp.upstreams (docs/mcp-upstreams.md): a stdio server (command) or a streamable HTTP one (url). */
export interface McpUpstreamConfig {
  name: string;
  /** stdio: the argv of the server process. */
  command?: string[];
  env?: Record<string, McpSecretValue>;
  cwd?: string;
  /** streamable HTTP: the endpoint. */
  url?: string;
  headers?: Record<string, McpSecretValue>;
  /** A stored credential sent as `Authorization: Bearer <value>`. */
  credential?: string;
  trust_annotations: boolean;
  /** Per upstream tool name: the class that overrides the default. */
  classes?: Record<string, "safe" | "mutating" | "dangerous">;
  timeout?: string;
  enabled: boolean;
}
