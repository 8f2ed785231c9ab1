import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import ts from 'typescript';

/** One broken rule of docs/architecture.md, with where it was found. */
export interface RuleViolation {
  packageName: string;
  file: string;
  rule: string;
  detail: string;
}

interface WorkspacePackage {
  name: string;
  dir: string;
  manifest: {
    name: string;
    private?: boolean;
    dependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
    peerDependencies?: Record<string, string>;
    optionalDependencies?: Record<string, string>;
  };
}

const WORKSPACE_FOLDERS = ['packages', 'apps', 'examples', 'bench'];
const APP_NAMES = new Set(['@hermes/cli', '@hermes/server']);
const CORE = '@hermes/core';
const PROTOCOLS = new Set(['@hermes/protocol-acp', '@hermes/protocol-tui', '@hermes/protocol-openai']);
/** The protocols' `/wire` entries; `/wire/framing` is the same folder without the schemas (the browser client's). */
const WIRE_ENTRIES = new Set([
  '@hermes/protocol-tui/wire',
  '@hermes/protocol-tui/wire/framing',
  '@hermes/protocol-openai/wire',
]);
/** What a protocol's `/wire` folder may import besides its own relative files. */
const WIRE_ALLOWED = new Set(['zod']);

function listPackages(root: string): WorkspacePackage[] {
  const found: WorkspacePackage[] = [];
  for (const folder of WORKSPACE_FOLDERS) {
    const base = join(root, folder);
    const candidates = folder === 'bench' ? [base] : safeList(base).map((entry) => join(base, entry));
    for (const dir of candidates) {
      const manifestPath = join(dir, 'package.json');
      try {
        const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as WorkspacePackage['manifest'];
        found.push({ name: manifest.name, dir, manifest });
      } catch {
        // not a package folder
      }
    }
  }
  return found;
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir).filter((entry) => statSync(join(dir, entry)).isDirectory());
  } catch {
    return [];
  }
}

function sourceFiles(dir: string): string[] {
  const files: string[] = [];
  const walk = (current: string) => {
    for (const entry of readdirSync(current, { withFileTypes: true })) {
      if (entry.name === 'node_modules' || entry.name === 'dist' || entry.name.startsWith('.')) continue;
      const full = join(current, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (/\.(c|m)?tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts')) files.push(full);
    }
  };
  for (const top of ['src', 'test']) {
    try {
      if (statSync(join(dir, top)).isDirectory()) walk(join(dir, top));
    } catch {
      // folder absent
    }
  }
  return files;
}

/** Module specifiers imported or re-exported by a TypeScript file, found by the compiler's own pre-processor. */
function importsOf(file: string): string[] {
  const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return info.importedFiles.map((imported) => imported.fileName);
}

/** `@scope/name` or `name` of a bare specifier; null for relative and `node:` specifiers. */
function packageOf(specifier: string): string | null {
  if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('node:')) return null;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? null);
}

function isTestFile(dir: string, file: string): boolean {
  const rel = relative(dir, file).split(sep);
  return rel[0] === 'test' || /\.test\.tsx?$/.test(file);
}

/**
 * Checks the dependency rules of docs/architecture.md over every workspace package under `root`:
 * the declared dependencies in each package.json and the imports of each source file.
 */
export function checkDependencyRules(root: string): RuleViolation[] {
  const packages = listPackages(root);
  const violations: RuleViolation[] = [];
  const report = (pkg: WorkspacePackage, file: string, rule: string, detail: string) =>
    violations.push({ packageName: pkg.name, file: relative(root, file), rule, detail });

  for (const pkg of packages) {
    const manifestFile = join(pkg.dir, 'package.json');
    const runtime = { ...pkg.manifest.dependencies, ...pkg.manifest.optionalDependencies };
    const declared = { ...runtime, ...pkg.manifest.peerDependencies, ...pkg.manifest.devDependencies };

    for (const dependency of Object.keys(declared)) {
      if (APP_NAMES.has(dependency) && pkg.name !== '@hermes/bench') {
        report(pkg, manifestFile, 'nothing-imports-an-app', `depends on the app ${dependency}`);
      }
    }
    if (pkg.name === CORE) {
      for (const dependency of Object.keys(declared)) {
        if (dependency.startsWith('@hermes/')) {
          report(pkg, manifestFile, 'core-is-standalone', `core depends on ${dependency}`);
        }
      }
    }
    if (PROTOCOLS.has(pkg.name)) {
      for (const dependency of Object.keys(declared)) {
        if (PROTOCOLS.has(dependency)) {
          report(pkg, manifestFile, 'protocols-are-independent', `depends on ${dependency}`);
        }
      }
      if (runtime[CORE] !== undefined) {
        report(pkg, manifestFile, 'core-is-an-optional-peer', `${CORE} must be an optional peer, not a dependency`);
      }
    }
    if (pkg.name === '@hermes/client-sdk') {
      for (const dependency of Object.keys(runtime)) {
        if (dependency === CORE || (dependency.startsWith('@hermes/') && !PROTOCOLS.has(dependency))) {
          report(pkg, manifestFile, 'client-sdk-wire-only', `depends on ${dependency}`);
        }
        if (dependency === '@hermes/protocol-acp') {
          report(
            pkg,
            manifestFile,
            'client-sdk-wire-only',
            'depends on @hermes/protocol-acp, which has no /wire entry',
          );
        }
      }
    }

    for (const file of sourceFiles(pkg.dir)) {
      const inTest = isTestFile(pkg.dir, file);
      const inWire = relative(pkg.dir, file).split(sep).slice(0, 2).join('/') === 'src/wire';
      for (const specifier of importsOf(file)) {
        const imported = packageOf(specifier);
        if (imported === null) continue;
        if (APP_NAMES.has(imported) && pkg.name !== '@hermes/bench' && !APP_NAMES.has(pkg.name)) {
          report(pkg, file, 'nothing-imports-an-app', `imports ${specifier}`);
        }
        if (pkg.name === CORE && imported.startsWith('@hermes/')) {
          report(pkg, file, 'core-is-standalone', `imports ${specifier}`);
        }
        if (PROTOCOLS.has(pkg.name)) {
          if (PROTOCOLS.has(imported) && imported !== pkg.name) {
            report(pkg, file, 'protocols-are-independent', `imports ${specifier}`);
          }
          const allowedCore = inTest ? [CORE, `${CORE}/testing`] : [CORE];
          if (imported === CORE && !allowedCore.includes(specifier)) {
            report(pkg, file, 'core-root-entry-only', `imports the deep path ${specifier}`);
          }
          // Test files next to the wire code are not part of the published entry.
          if (inWire && !inTest && !WIRE_ALLOWED.has(imported)) {
            report(pkg, file, 'wire-is-standalone', `the /wire entry imports ${specifier}`);
          }
        }
        if (
          pkg.name === '@hermes/client-sdk' &&
          !inTest &&
          imported.startsWith('@hermes/') &&
          !WIRE_ENTRIES.has(specifier)
        ) {
          report(pkg, file, 'client-sdk-wire-only', `imports ${specifier}`);
        }
      }
    }
  }
  return violations;
}
