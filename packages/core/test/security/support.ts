import { execFileSync } from 'node:child_process';

/**
 * Fails (never skips) when bubblewrap is missing: the sandbox tests must run wherever the suite
 * runs, and CI installs it.
 */
export function requireBwrap(): void {
  try {
    execFileSync('bwrap', ['--version'], { stdio: 'ignore' });
  } catch {
    throw new Error(
      'bubblewrap (bwrap) is not installed: the sandbox tests need it. .ci/run installs it (apt-get install bubblewrap); install it the same way to run these tests.',
    );
  }
}
