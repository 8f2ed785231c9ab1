/**
 * Session store benchmarks: append throughput, loading a long transcript, and full-text search over
 * a large history. Each runs on a real WAL database file in a temporary directory, as a host would.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { type NewMessage, openSqliteStore, type SqliteSessionStore } from '@hermes/core';
import { median } from './stats.js';

/** One measured figure beside its target. */
export interface StoreBenchmarkResult {
  name: string;
  unit: string;
  value: number;
  target: string;
}

/** Deterministic pseudo-random numbers (mulberry32), so every run indexes the same text. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = state;
    mixed = Math.imul(mixed ^ (mixed >>> 15), mixed | 1);
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), mixed | 61);
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const SYLLABLES = [
  'ka',
  'lo',
  'mi',
  'ne',
  'ru',
  'sa',
  'ti',
  'vo',
  'ze',
  'pa',
  'qui',
  'dro',
  'fen',
  'gal',
  'hor',
  'jun',
];

/** A vocabulary of made-up words with a Zipf-like pick, so some words are common and most are rare. */
function textGenerator(seed: number): (words: number) => string {
  const random = seededRandom(seed);
  const vocabulary: string[] = [];
  for (let index = 0; index < 20_000; index += 1) {
    let word = '';
    let value = index + 1;
    while (value > 0) {
      word += SYLLABLES[value % SYLLABLES.length];
      value = Math.floor(value / SYLLABLES.length);
    }
    vocabulary.push(word);
  }
  return (words) => {
    const parts: string[] = [];
    for (let index = 0; index < words; index += 1) {
      const rank = Math.floor(vocabulary.length ** random()) - 1;
      parts.push(vocabulary[Math.max(0, rank)] as string);
    }
    return parts.join(' ');
  };
}

function turnRows(text: (words: number) => string, turn: number): NewMessage[] {
  const turnId = `turn_${turn}`;
  return [
    { role: 'user', content: text(20), turnId },
    {
      role: 'assistant',
      content: '',
      turnId,
      toolCalls: [{ id: `call_${turn}`, name: 'read_file', arguments: `{"path":"/src/${text(1)}.ts"}` }],
    },
    { role: 'tool', content: text(200), turnId, toolCallId: `call_${turn}`, toolName: 'read_file' },
    { role: 'assistant', content: text(80), turnId, finishReason: 'stop' },
  ];
}

async function withStore<T>(body: (store: SqliteSessionStore) => Promise<T>): Promise<T> {
  const directory = mkdtempSync(join(tmpdir(), 'hermes-bench-store-'));
  const store = await openSqliteStore({ path: join(directory, 'state.db') });
  try {
    return await body(store);
  } finally {
    await store.close();
    rmSync(directory, { recursive: true, force: true });
  }
}

/** Rows per second when every row is its own `appendMessages` call (one transaction each), as streaming writes do. */
async function appendPerRow(rowCount: number): Promise<number> {
  return withStore(async (store) => {
    const text = textGenerator(1);
    await store.createSession({ id: 'bench_append_rows' });
    const rows = Array.from({ length: rowCount / 4 }, (_, turn) => turnRows(text, turn)).flat();
    const started = performance.now();
    for (const row of rows) await store.appendMessages('bench_append_rows', [row]);
    return rows.length / ((performance.now() - started) / 1_000);
  });
}

/** Rows per second when a whole turn (user, tool call, tool result, answer) is appended in one call. */
async function appendPerTurn(rowCount: number): Promise<number> {
  return withStore(async (store) => {
    const text = textGenerator(2);
    await store.createSession({ id: 'bench_append_turns' });
    const turns = Array.from({ length: rowCount / 4 }, (_, turn) => turnRows(text, turn));
    const started = performance.now();
    for (const rows of turns) await store.appendMessages('bench_append_turns', rows);
    return (turns.length * 4) / ((performance.now() - started) / 1_000);
  });
}

/** Median milliseconds to load the active transcript of a 10,000-message session. */
async function loadLongSession(runs: number): Promise<number> {
  return withStore(async (store) => {
    const text = textGenerator(3);
    await store.createSession({ id: 'bench_load' });
    const rows = Array.from({ length: 2_500 }, (_, turn) => turnRows(text, turn)).flat();
    for (let start = 0; start < rows.length; start += 500) {
      await store.appendMessages('bench_load', rows.slice(start, start + 500));
    }
    const samples: number[] = [];
    for (let run = 0; run < runs; run += 1) {
      const started = performance.now();
      const loaded = await store.loadConversation('bench_load');
      samples.push(performance.now() - started);
      if (loaded.length !== 10_000) throw new Error(`loaded ${loaded.length} rows, expected 10,000`);
    }
    return median(samples);
  });
}

/** Median milliseconds of a search over `messageCount` messages spread over 100-message sessions. */
async function searchHistory(messageCount: number, queries: number): Promise<number> {
  return withStore(async (store) => {
    const text = textGenerator(4);
    for (let session = 0; session < messageCount / 100; session += 1) {
      const id = `bench_search_${session}`;
      await store.createSession({ id, source: 'cli' });
      await store.appendMessages(id, Array.from({ length: 25 }, (_, turn) => turnRows(text, turn)).flat());
    }
    const queryText = textGenerator(5);
    const samples: number[] = [];
    for (let query = 0; query < queries; query += 1) {
      // Two-word queries, one of them a prefix, like a person searching their history.
      const [first, second] = queryText(2).split(' ');
      const started = performance.now();
      await store.search(`${first} ${second?.slice(0, 4)}*`);
      samples.push(performance.now() - started);
    }
    return median(samples);
  });
}

/** Runs the store benchmarks; `quick` uses smaller corpora for CI smoke runs. */
export async function runStoreBenchmarks(options: { quick: boolean }): Promise<StoreBenchmarkResult[]> {
  const appendRows = options.quick ? 2_000 : 20_000;
  const searchMessages = options.quick ? 20_000 : 100_000;
  return [
    {
      name: 'store: append, one call per row',
      unit: 'rows/s',
      value: await appendPerRow(appendRows),
      target: '≥ 20,000 rows/s',
    },
    {
      name: 'store: append, one call per turn (4 rows)',
      unit: 'rows/s',
      value: await appendPerTurn(appendRows),
      target: '≥ 20,000 rows/s',
    },
    {
      name: 'store: load a 10,000-message session',
      unit: 'ms',
      value: await loadLongSession(options.quick ? 3 : 7),
      target: '≤ 50 ms',
    },
    {
      name: `store: search ${searchMessages.toLocaleString('en-US')} messages`,
      unit: 'ms',
      value: await searchHistory(searchMessages, options.quick ? 10 : 30),
      target: 'reported',
    },
  ];
}
