/** What a search engine is asked for (after argument checks; the pattern is known to compile). */
export interface ContentSearchRequest {
  /** Absolute directory or file to search. */
  root: string;
  rootIsFile: boolean;
  pattern: string;
  ignoreCase: boolean;
  /** Flags for the JavaScript RegExp the walker builds (`u` when the pattern allows it, `i`). */
  regexFlags: string;
  /** Context lines to collect around matches (0 when only counts are needed). */
  context: number;
  /** Keep line texts (content output); false for files_only and count. */
  keepText: boolean;
  /** A basename glob the engine may use to skip files early (the caller filters again). */
  basenameGlob: string | null;
  /** Stop with {@link TooManyMatchesError} past this many matching lines (content output only). */
  maxMatches: number | null;
  signal: AbortSignal;
}

/** Matches of one file. */
export interface FileMatches {
  absolutePath: string;
  /** Matching line numbers → text (empty texts when `keepText` is false). */
  matches: Map<number, string>;
  /** Context line numbers → text. */
  context: Map<number, string>;
}

/** A search engine: ripgrep or the built-in walker. Both must return the same data. */
export interface SearchEngine {
  readonly name: 'ripgrep' | 'walker';
  /** Files under `root` that the ignore rules keep (absolute paths, any order). */
  listFiles(root: string, rootIsFile: boolean, signal: AbortSignal): Promise<string[]>;
  /** Matching lines of every searchable text file under `root` (any order). */
  searchContent(request: ContentSearchRequest): Promise<FileMatches[]>;
}

/** Thrown when a content search would return more matching lines than can be handled. */
export class TooManyMatchesError extends Error {
  constructor(readonly limit: number) {
    super(`more than ${limit} matching lines`);
    this.name = 'TooManyMatchesError';
  }
}
