// Import rules inside @hermes/protocol-tui (docs/adr/0016-protocol-tui-import-layers.md), checked by
// scripts/import-layers.ts from test/dependency-rules.test.ts.
//
// The modules of src/ form layers, listed bottom first. A module may import modules of its own
// layer and of LOWER layers, never of a higher one; type-only imports count too. Where a lower
// module must reach up (a live session asking its gateway for `info`), it declares an interface the
// higher module implements. Every module of src/ belongs to a layer, so a new file must be placed.

/** Bottom first: [layer name, entries]. An entry ending in '/' is a folder, else one file of src/. */
const LAYERS = [
  // Schemas, framing and transports; also the published `/wire` entry, so it imports nothing else.
  ['wire', ['wire/']],
  // Leaves that know no session: ids, usage and transcript shapes, the replay rings, a connection's
  // outbound writer, the host's skills as sessions see them.
  [
    'foundation',
    [
      'version.ts',
      'ids.ts',
      'usage.ts',
      'projection.ts',
      'replay-ring.ts',
      'git-branch.ts',
      'image-parts.ts',
      'connection.ts',
      'skills.ts',
      'instance-relay.ts',
      'gateway-tickets.ts',
    ],
  ],
  // Server requests (§6) and the host callbacks that raise them; they see a session only as a
  // `RequestSession`.
  ['requests', ['server-requests.ts', 'client-requests.ts', 'session-callbacks.ts']],
  // One session's runtime; it sees its gateway only as a `SessionGateway`.
  ['session', ['live-session.ts']],
  // The gateway's shared state: settings, session registry and lifecycle.
  ['state', ['gateway-state.ts']],
  // The method handlers and the method table; handlers receive a `MethodContext`.
  ['methods', ['methods/']],
  // The dispatcher: connections, routing through the method table, shutdown.
  ['dispatch', ['gateway-core.ts']],
  ['gateway', ['gateway.ts']],
  ['endpoints', ['stdio.ts', 'websocket-endpoint.ts']],
  ['entry', ['index.ts']],
];

/** Regex matching a module of one of `entries`. */
function entriesPattern(entries) {
  const parts = entries.map((entry) => (entry.endsWith('/') ? `src/${entry}` : `src/${entry.replace(/\./g, '\\.')}$`));
  return `^(${parts.join('|')})`;
}

const layerRules = [];
LAYERS.forEach(([name, entries], index) => {
  for (const [higherName, higherEntries] of LAYERS.slice(index + 1)) {
    layerRules.push({
      name: `${name}-below-${higherName}`,
      comment: `the ${name} layer (${entries.join(', ')}) must not import the higher ${higherName} layer`,
      severity: 'error',
      from: { path: entriesPattern(entries) },
      to: { path: entriesPattern(higherEntries) },
    });
  }
});

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'no import cycle inside the gateway, type-only imports included',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^src/', circular: true },
    },
    {
      name: 'every-module-has-a-layer',
      comment: 'a module of src/ missing from LAYERS is unchecked: add it to the layer it belongs to',
      severity: 'error',
      from: { path: '^src/', pathNot: entriesPattern(LAYERS.flatMap(([, entries]) => entries)) },
      to: {},
    },
    ...layerRules,
    // Inside methods/: the context helpers are the handlers' base, the method tables their top.
    {
      name: 'method-context-is-the-base',
      comment: 'methods/context.ts must not import a handler or a table',
      severity: 'error',
      from: { path: '^src/methods/context\\.ts$' },
      to: { path: '^src/methods/' },
    },
    {
      name: 'method-tables-on-top',
      comment: 'only the method tables import the method tables',
      severity: 'error',
      from: { path: '^src/methods/', pathNot: '^src/methods/(index|tui-client-table)\\.ts$' },
      to: { path: '^src/methods/(index|tui-client-table)\\.ts$' },
    },
  ],
  options: {
    // Type-only imports are dependencies too: a cycle of interfaces is still a tangle.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.test\\.ts$' },
  },
};
