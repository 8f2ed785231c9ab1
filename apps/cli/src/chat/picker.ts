import search from '@inquirer/search';

/** One entry of a picker. */
export interface PickerChoice<T> {
  label: string;
  value: T;
  /** Shown dimmed under the list for the highlighted entry. */
  hint?: string;
}

/**
 * Lets the user pick one entry on the terminal: arrow keys move, typing filters (every typed word
 * must appear in the label or the hint), Enter picks. Resolves null when the user backs out with
 * Ctrl-C or Escape, or when `signal` aborts.
 */
export async function pick<T>(
  message: string,
  choices: PickerChoice<T>[],
  io: { input: NodeJS.ReadableStream; output: NodeJS.WritableStream; signal?: AbortSignal },
): Promise<T | null> {
  const escapeKey = new AbortController();
  const onKeypress = (_typed: string | undefined, key: { name?: string } | undefined) => {
    if (key?.name === 'escape') escapeKey.abort();
  };
  io.input.on('keypress', onKeypress);
  const signal = io.signal ? AbortSignal.any([io.signal, escapeKey.signal]) : escapeKey.signal;
  try {
    return await search<T>(
      {
        message,
        pageSize: 12,
        source: (term) => {
          const words = (term ?? '').toLowerCase().split(/\s+/).filter(Boolean);
          return choices
            .filter((choice) => {
              const haystack = `${choice.label} ${choice.hint ?? ''}`.toLowerCase();
              return words.every((word) => haystack.includes(word));
            })
            .map((choice) => ({
              name: choice.label,
              value: choice.value,
              ...(choice.hint ? { description: choice.hint } : {}),
            }));
        },
      },
      { input: io.input, output: io.output, clearPromptOnDone: true, signal },
    );
  } catch (error) {
    // Ctrl-C (ExitPromptError) and Escape or an abort (AbortPromptError) back out of the picker.
    const name = (error as Error | null)?.name;
    if (name === 'ExitPromptError' || name === 'AbortPromptError') return null;
    throw error;
  } finally {
    io.input.off('keypress', onKeypress);
  }
}
