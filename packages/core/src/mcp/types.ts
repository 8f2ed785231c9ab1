/** One MCP server's configuration (spec/core.md §15.1). */
export interface McpServerConfig {
  name: string;
  command?: string;
  args?: string[];
  /** Values may reference `${VAR}`, resolved from the host environment and `.env`. */
  env?: Record<string, string>;
  cwd?: string;
  url?: string;
  /** Values may reference `${VAR}`, resolved from the host environment and `.env`. */
  headers?: Record<string, string>;
  enabled?: boolean;
  /** Seconds per tool call (default 120; 0 means no limit). */
  timeout?: number;
  /** Seconds for connection and the initial tool listing (default 60; 0 means no limit). */
  connect_timeout?: number;
  tools?: { include?: string[]; exclude?: string[] };
}

/** Status of one MCP server. */
export interface McpServerStatus {
  name: string;
  transport: 'stdio' | 'http';
  state: 'connecting' | 'connected' | 'failed' | 'disabled';
  /**
   * Tools the server contributes. A server that disconnected keeps its tools registered (they
   * answer "MCP server <name> is unavailable" until a reload), so its count stays as it was.
   */
  toolCount: number;
  error?: string;
}

/** The MCP client manager of a host (spec/core.md §15.2). */
export interface McpManager {
  /** The host's servers in configuration order, then the session servers in attach order. */
  status(): McpServerStatus[];
  /**
   * Closes every connection, re-reads `mcp_servers` and reconnects; resolves with {@link McpManager.status}.
   * With `sessionId` (a live session that asked for the reload), a host server's missing `${VAR}` is asked of
   * that session's `secret` callback instead of failing the server (spec/core.md §24.7).
   */
  reload(options?: { sessionId?: string }): Promise<McpServerStatus[]>;
  /**
   * Host servers that failed only because a `${VAR}` was missing when no client could be asked (the host's
   * start) connect again, asking the live session's `secret` callback for the variable (spec/core.md §24.7).
   * Resolves with the names of the servers it retries; their connections go on in the background, since an
   * answer waits on a person (each attempt is still bounded by its server's `connect_timeout`).
   */
  askMissingVariables(sessionId: string): string[];
  /** Called again for a session, replaces that session's previous list (spec/core.md §24.6). */
  attachSessionServers(sessionId: string, servers: McpServerConfig[]): Promise<McpServerStatus[]>;
}
