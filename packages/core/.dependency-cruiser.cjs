// Import rules inside @hermes/core (docs/adr/0015-core-import-layers.md), checked by
// scripts/import-layers.ts from test/dependency-rules.test.ts.
//
// The folders of src/ form layers, listed bottom first. A file may import files of its own folder
// and of any LOWER layer, never of its own layer's other folders nor of a higher layer; type-only
// imports count too. `foundation` is the modules directly in src/ (errors, ids, clock, logger,
// types, events, turn types…) plus util/.

/** Bottom first: [layer name, folders]. '.' stands for the modules directly in src/. */
const LAYERS = [
  ['foundation', ['.', 'util']],
  ['settings', ['config', 'approvals']],
  ['capabilities', ['providers', 'tools']],
  ['services', ['store', 'mcp', 'checkpoints', 'skills']],
  ['api', ['api']],
  ['commands', ['commands']],
  ['agent', ['agent']],
  ['entry', ['testing', 'index.ts']],
];

/** Regex matching a file inside one of `folders`. */
function folderPattern(folders) {
  const parts = folders.map((folder) => {
    if (folder === '.') return 'src/(?!index\\.ts$)[^/]+\\.ts$';
    if (folder.endsWith('.ts')) return `src/${folder.replace('.', '\\.')}$`;
    return `src/${folder}/`;
  });
  return `^(${parts.join('|')})`;
}

const layerRules = [];
LAYERS.forEach(([name, folders], index) => {
  // Siblings inside one layer stay independent of each other.
  for (const folder of folders) {
    const siblings = folders.filter((other) => other !== folder);
    if (siblings.length === 0) continue;
    layerRules.push({
      name: `${name}-siblings-independent`,
      comment: `${folder} must not import the other folders of the ${name} layer`,
      severity: 'error',
      from: { path: folderPattern([folder]) },
      to: { path: folderPattern(siblings) },
    });
  }
  // And nothing imports upward.
  for (const [higherName, higherFolders] of LAYERS.slice(index + 1)) {
    layerRules.push({
      name: `${name}-below-${higherName}`,
      comment: `the ${name} layer (${folders.join(', ')}) must not import the higher ${higherName} layer`,
      severity: 'error',
      from: { path: folderPattern(folders) },
      to: { path: folderPattern(higherFolders) },
    });
  }
});

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'no import cycle inside the core, type-only imports included',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^src/', circular: true },
    },
    ...layerRules,
  ],
  options: {
    // Type-only imports are dependencies too: a cycle of interfaces is still a tangle.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.test\\.ts$' },
  },
};
