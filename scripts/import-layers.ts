import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { cruise, type ICruiseResult, type IReporterOutput } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';

/** One import inside a package that breaks a rule of that package's dependency-cruiser config. */
export interface ImportViolation {
  /** The rule's name in the config, e.g. `no-circular` or `commands-below-agent`. */
  rule: string;
  /** The importing file, relative to the package folder. */
  from: string;
  /** The imported file, relative to the package folder. */
  to: string;
  /** For a cycle, the files around it, starting after `from` and ending with `from`. */
  cycle?: string[];
}

/** Where {@link checkImportLayers} looks for a package's rules and its sources. */
export interface ImportLayerOptions {
  /** The dependency-cruiser config, relative to the package folder. */
  configFile?: string;
  /** The folders (relative to the package folder) to cruise. */
  roots?: string[];
}

/**
 * Checks the imports inside one package against the rules in its dependency-cruiser config
 * (`.dependency-cruiser.cjs` by default): the layer order of its folders and the absence of import
 * cycles. Returns every `error`/`warn` violation, sorted, so a test can expect `[]`; rules at
 * `info` or `ignore` severity are not reported. The config's `tsConfig.fileName` is read relative
 * to the package folder, whatever the current directory.
 */
export async function checkImportLayers(
  packageDir: string,
  options: ImportLayerOptions = {},
): Promise<ImportViolation[]> {
  const baseDir = resolve(packageDir);
  const configPath = join(baseDir, options.configFile ?? '.dependency-cruiser.cjs');
  if (!existsSync(configPath)) throw new Error(`checkImportLayers: no dependency-cruiser config at ${configPath}`);
  const cruiseOptions = await extractDepcruiseOptions(configPath);
  const tsConfigName = cruiseOptions.tsConfig?.fileName;
  const tsConfig = tsConfigName ? extractTSConfig(join(baseDir, tsConfigName)) : undefined;
  const reported: IReporterOutput = await cruise(
    options.roots ?? ['src'],
    { ...cruiseOptions, baseDir, validate: true, outputType: 'json' },
    undefined,
    tsConfig ? { tsConfig } : undefined,
  );
  const result: ICruiseResult =
    typeof reported.output === 'string' ? (JSON.parse(reported.output) as ICruiseResult) : reported.output;
  return result.summary.violations
    .filter((violation) => violation.rule.severity === 'error' || violation.rule.severity === 'warn')
    .map((violation) => {
      const found: ImportViolation = { rule: violation.rule.name, from: violation.from, to: violation.to };
      if (violation.cycle) found.cycle = violation.cycle.map((step) => step.name);
      return found;
    })
    .sort((a, b) => a.rule.localeCompare(b.rule) || a.from.localeCompare(b.from) || a.to.localeCompare(b.to));
}
