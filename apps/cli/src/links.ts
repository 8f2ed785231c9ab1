/**
 * The repository on GitHub (the `repository` field of package.json). The guides in its docs/ folder
 * are not part of the npm package, so a message that points to one links it here: a relative
 * `docs/…` path means nothing to someone who installed the CLI from npm.
 */
export const REPOSITORY_URL = 'https://github.com/hermes-ts/hermes-ts';

/** The web address of a guide in the repository's docs/ folder, for example `guideUrl('providers.md')`. */
export function guideUrl(file: string): string {
  return `${REPOSITORY_URL}/blob/main/docs/${file}`;
}
