// Bundles the page for the browser with esbuild: the client-sdk resolves through its `browser` export condition, so
// the bundle holds the global-WebSocket client and no Node module. Output: dist/index.html and dist/app.js.
import { copyFileSync, mkdirSync } from 'node:fs';
import { build } from 'esbuild';

mkdirSync('dist', { recursive: true });
const result = await build({
  entryPoints: ['src/app.ts'],
  outfile: 'dist/app.js',
  bundle: true,
  minify: true,
  sourcemap: true,
  format: 'esm',
  platform: 'browser',
  target: ['chrome110', 'firefox110', 'safari16'],
  metafile: true,
  logLevel: 'warning',
});
copyFileSync('src/index.html', 'dist/index.html');
const bytes = Object.values(result.metafile.outputs).find((output) => output.entryPoint)?.bytes ?? 0;
process.stdout.write(`dist/app.js: ${bytes} bytes\n`);
