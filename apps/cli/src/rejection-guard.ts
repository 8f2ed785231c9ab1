/**
 * Keeps a long-running mode (`hermes serve`, `hermes gateway`) alive through a promise nobody awaited that rejects,
 * such as a background task's store error during a database restart: node's default is to exit on an unhandled
 * rejection, which took every instance down with its database (issue 33). The rejection is written to stderr (stdout
 * may carry protocol frames) with a running count; each one is a bug to fix where the promise was dropped.
 *
 * @param label - the mode, prefixed to each line (`hermes serve`).
 */
export function guardUnhandledRejections(label: string): void {
  let count = 0;
  process.on('unhandledRejection', (reason: unknown) => {
    count += 1;
    const text = reason instanceof Error ? (reason.stack ?? reason.message) : String(reason);
    process.stderr.write(`${label}: unhandled rejection #${count}, still running: ${text}\n`);
  });
}
