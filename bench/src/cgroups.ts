/**
 * CPU isolation of the benchmarks (issue 34.1, ADR 0055): when the harness runs as root and the kernel's CPU
 * controllers are writable, each measured server process runs in a CPU group of its own (a cpuset and a CFS quota)
 * and the harness itself, with everything it starts that is not measured (load generator, scripted model,
 * PostgreSQL), in another one, the load group. The CPU a group received is read from the kernel (cgroup v1
 * `cpuacct.usage`, v2 `cpu.stat` `usage_usec`), in nanoseconds rather than the 10 ms ticks of `/proc/<pid>/stat`.
 *
 * Without isolation every figure is still measured, the same way, and printed "not isolated".
 *
 * The groups live under one parent per harness run (`hermes-bench-<pid>`), removed at exit, on SIGINT and SIGTERM,
 * and by the next run when a harness was killed before it could (SIGKILL).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** How the harness is isolated. */
export type IsolationKind = 'cgroup v1' | 'cgroup v2' | 'none';

/** A CPU group: where a process runs, and how much CPU the group has received. */
export interface CpuGroup {
  readonly name: string;
  /** The CPUs of its cpuset, as the kernel writes them (`1`, `0-1`). */
  readonly cpus: string;
  /** Its CFS quota in cores, or null for none. */
  readonly quotaCores: number | null;
  /** Moves a process (all its threads) into the group; processes it starts afterwards are born in it. */
  add(pid: number): void;
  /** CPU time received by every process of the group since it was made, in milliseconds. */
  cpuMs(): number;
  /**
   * The group's CFS bandwidth counters since it was made (cgroup v1 `cpu.stat`, v2 `cpu.stat`): periods in which it
   * had work, periods in which it ran out of quota, and the time its threads were held for that, in milliseconds.
   */
  throttling(): Throttling;
  /**
   * Run-queue wait of the group's threads now alive, in milliseconds (`/proc/<tid>/schedstat`, second field): time
   * runnable but not running, whether for another process on the CPU or for the group's own exhausted quota.
   */
  runDelayMs(): number;
}

/** CFS bandwidth counters of a group ({@link CpuGroup.throttling}). */
export interface Throttling {
  periods: number;
  throttled: number;
  throttledMs: number;
}

/** Sum of the run-queue wait of `threads` (thread ids), in ms; threads gone meanwhile count nothing. */
export function runDelayOf(threads: number[]): number {
  let total = 0;
  for (const thread of threads) {
    try {
      total += Number(readFileSync(`/proc/${thread}/schedstat`, 'utf8').split(' ')[1]) / 1e6;
    } catch {
      // Ended meanwhile.
    }
  }
  return total;
}

/** `name value` lines (a `cpu.stat`) as a map. */
function statFields(text: string): Map<string, number> {
  const fields = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [name, value] = line.split(' ');
    if (name && value !== undefined) fields.set(name, Number(value));
  }
  return fields;
}

/**
 * A group's CFS bandwidth counters from its `cpu.stat`; v1 and v2 name the periods alike but give the held time under
 * their own name and unit (v1 `throttled_time` in ns, v2 `throttled_usec` in µs), hence `heldField` and `perMs`.
 */
function throttlingOf(stat: string, heldField: string, perMs: number): Throttling {
  const fields = statFields(stat);
  return {
    periods: fields.get('nr_periods') ?? 0,
    throttled: fields.get('nr_throttled') ?? 0,
    throttledMs: (fields.get(heldField) ?? 0) / perMs,
  };
}

/** The isolation of one harness run. */
export interface Isolation {
  readonly kind: IsolationKind;
  /** One line for the report: what was set up, or why nothing was. */
  readonly description: string;
  /** `isolated` or `not isolated`, printed beside each figure. */
  readonly label: 'isolated' | 'not isolated';
  /** The harness's own group (null when not isolated). */
  readonly load: CpuGroup | null;
  /**
   * A group for one measured server process: `quotaCores` of CPU (null: no quota), on the CPUs set aside for
   * servers (the `index`-th of them when there are several). Null when not isolated. Each call makes a new group.
   */
  serverGroup(label: string, quotaCores: number | null, index?: number): CpuGroup | null;
  /**
   * A group on the load group's CPUs, without a quota, for an unmeasured helper whose CPU is itself a figure (the
   * PostgreSQL server of the pgturn section). Null when not isolated. Each call makes a new group.
   */
  loadSideGroup(label: string): CpuGroup | null;
  /** The CPUs servers run on, and those of the load group (as the kernel writes lists). */
  readonly serverCpus: number[];
  readonly loadCpus: number[];
  /**
   * Removes every group (processes still in one go back to the root group). Safe to call twice.
   */
  release(): void;
  /** Ends every process in the groups but the harness (SIGTERM, then SIGKILL), as on SIGINT. */
  endAll(): Promise<void>;
}

/**
 * Weight of the harness's groups against the machine's other processes: cgroup v1 `cpu.shares` (1024 is one
 * ordinary process) and v2 `cpu.weight` (100 is one). On a machine shared with other work, a group that weighs as one
 * process would receive whatever the others leave; with this weight a server receives its quota and the load group
 * what it needs, and what they do not take goes to the others.
 */
const SHARES_V1 = 1024 * 16;
const WEIGHT_V2 = 1600;
/**
 * Weight of the run's parent group against the machine's other processes: the most the kernel takes (v1 shares
 * 262,144; v2 `cpu.weight` 10,000). The kernel splits a parent's weight between the CPUs in proportion to the
 * parent's load on each, so with the load side busy on its CPU the servers' part of 16 processes' weight was about
 * half of it, short of 0.75 core against a dozen other runnable processes: the instances missed their quota while
 * barely throttled (ADR 0096). The quotas still cap the servers; the weight only decides who waits.
 * `HERMES_BENCH_PARENT_SHARES` (v1 shares) sets another for an experiment; v2 takes it scaled as `cpu.weight`.
 */
const PARENT_SHARES_V1 = Number(process.env.HERMES_BENCH_PARENT_SHARES) || 262_144;
const PARENT_WEIGHT_V2 = Math.min(10_000, Math.round((PARENT_SHARES_V1 / 1024) * 100));
/** CFS period of a quota; `HERMES_BENCH_CFS_PERIOD_US` overrides it (an experiment, not a bench setting). */
const PERIOD_US = Number(process.env.HERMES_BENCH_CFS_PERIOD_US) || 100_000;
const PREFIX = 'hermes-bench-';

/** `0-2,5` → [0, 1, 2, 5]. */
export function parseCpuList(list: string): number[] {
  const cpus: number[] = [];
  for (const part of list.trim().split(',')) {
    if (part === '') continue;
    const [first, last] = part.split('-').map(Number) as [number, number | undefined];
    for (let cpu = first; cpu <= (last ?? first); cpu += 1) cpus.push(cpu);
  }
  return cpus;
}

/**
 * Splits the machine's CPUs: the upper half (at least one) for servers, the rest for the load group; on a single CPU
 * both share it (the quota still isolates the servers from each other).
 */
export function splitCpus(cpus: number[]): { server: number[]; load: number[] } {
  if (cpus.length < 2) return { server: cpus, load: cpus };
  const serverCount = Math.max(1, Math.floor(cpus.length / 2));
  return { server: cpus.slice(cpus.length - serverCount), load: cpus.slice(0, cpus.length - serverCount) };
}

function write(path: string, value: string): void {
  writeFileSync(path, value);
}

function read(path: string): string {
  return readFileSync(path, 'utf8');
}

/** Mount points of the cgroup v1 hierarchies that carry `controller` (from /proc/mounts). */
function v1Mount(controller: string): string | null {
  for (const line of read('/proc/mounts').split('\n')) {
    const [, mountPoint, type, options] = line.split(' ');
    if (type === 'cgroup' && options?.split(',').includes(controller) && mountPoint) return mountPoint;
  }
  return null;
}

function pidAlive(pid: number): boolean {
  return existsSync(`/proc/${pid}`);
}

/** Moves every process of `group` (a directory with `cgroup.procs`) to `root`, then removes it. */
function drainAndRemove(group: string, root: string): void {
  if (!existsSync(group)) return;
  for (const entry of readdirSync(group, { withFileTypes: true }))
    if (entry.isDirectory()) drainAndRemove(join(group, entry.name), root);
  for (let attempt = 0; attempt < 5; attempt += 1) {
    for (const pid of read(join(group, 'cgroup.procs')).split('\n').filter(Boolean)) {
      try {
        write(join(root, 'cgroup.procs'), pid);
      } catch {
        // The process ended meanwhile.
      }
    }
    try {
      rmdirSync(group);
      return;
    } catch {
      // A process that was exiting still counted; try again.
    }
  }
}

/** Every process in `group` and the groups under it. */
function processesIn(group: string): number[] {
  if (!existsSync(group)) return [];
  const pids = read(join(group, 'cgroup.procs')).split('\n').filter(Boolean).map(Number);
  for (const entry of readdirSync(group, { withFileTypes: true }))
    if (entry.isDirectory()) pids.push(...processesIn(join(group, entry.name)));
  return pids;
}

/**
 * Ends the processes of `group` but this one: SIGTERM, then SIGKILL for those still there after 2 s, then waits (up to
 * 2 s more) until they are gone. On SIGINT or SIGTERM the harness's children (servers, model, PostgreSQL) would
 * otherwise outlive it, and a server draining streams whose client is gone takes far longer than that. Asynchronous,
 * so that this process reaps its children meanwhile: a child not yet reaped still holds its group.
 */
async function endProcesses(group: string): Promise<void> {
  const pids = processesIn(group).filter((pid) => pid !== process.pid);
  const signal = (pid: number, name: NodeJS.Signals) => {
    try {
      process.kill(pid, name);
    } catch {
      // Gone already.
    }
  };
  const settle = async () => {
    for (let waited = 0; waited < 2_000 && processesIn(group).some((pid) => pid !== process.pid); waited += 50)
      await new Promise((resolve) => setTimeout(resolve, 50));
  };
  for (const pid of pids) signal(pid, 'SIGTERM');
  await settle();
  for (const pid of pids.filter(pidAlive)) signal(pid, 'SIGKILL');
  await settle();
}

/** Removes the groups of earlier harness runs whose process is gone (one killed with SIGKILL cleans up nothing). */
function removeStale(roots: string[]): void {
  for (const root of roots) {
    for (const entry of readdirSync(root)) {
      if (!entry.startsWith(PREFIX)) continue;
      const pid = Number(entry.slice(PREFIX.length));
      if (Number.isInteger(pid) && !pidAlive(pid)) drainAndRemove(join(root, entry), root);
    }
  }
}

function notIsolated(reason: string): Isolation {
  return {
    kind: 'none',
    description: `not isolated: ${reason}`,
    label: 'not isolated',
    load: null,
    serverGroup: () => null,
    loadSideGroup: () => null,
    serverCpus: [],
    loadCpus: [],
    release: () => {},
    endAll: async () => {},
  };
}

/** The cgroup v1 groups: one directory per group in each of the cpu, cpuacct and cpuset hierarchies. */
function setUpV1(): Isolation {
  const cpuRoot = v1Mount('cpu');
  const cpuacctRoot = v1Mount('cpuacct');
  const cpusetRoot = v1Mount('cpuset');
  if (!cpuRoot || !cpuacctRoot || !cpusetRoot)
    return notIsolated('the cgroup v1 cpu, cpuacct and cpuset hierarchies are not all mounted');
  const roots = [...new Set([cpuRoot, cpuacctRoot, cpusetRoot])];
  removeStale(roots);
  const parentName = `${PREFIX}${process.pid}`;
  const parents = roots.map((root) => join(root, parentName));
  const allCpus = parseCpuList(read(join(cpusetRoot, 'cpuset.effective_cpus')));
  const mems = read(join(cpusetRoot, 'cpuset.effective_mems')).trim();
  const { server: serverCpus, load: loadCpus } = splitCpus(allCpus);
  const made: string[] = [];
  for (const parent of parents) {
    mkdirSync(parent);
    made.push(parent);
  }
  const cpusetParent = join(cpusetRoot, parentName);
  write(join(cpusetParent, 'cpuset.cpus'), allCpus.join(','));
  write(join(cpusetParent, 'cpuset.mems'), mems);
  write(join(cpuRoot, parentName, 'cpu.shares'), String(PARENT_SHARES_V1));
  const makeGroup = (name: string, cpus: number[], quotaCores: number | null): CpuGroup => {
    const directories = roots.map((root) => join(root, parentName, name));
    for (const directory of directories) mkdirSync(directory);
    const cpuset = join(cpusetRoot, parentName, name);
    write(join(cpuset, 'cpuset.cpus'), cpus.join(','));
    write(join(cpuset, 'cpuset.mems'), mems);
    const cpu = join(cpuRoot, parentName, name);
    write(join(cpu, 'cpu.shares'), String(SHARES_V1));
    if (quotaCores !== null) {
      write(join(cpu, 'cpu.cfs_period_us'), String(PERIOD_US));
      write(join(cpu, 'cpu.cfs_quota_us'), String(Math.round(quotaCores * PERIOD_US)));
    }
    const usage = join(cpuacctRoot, parentName, name, 'cpuacct.usage');
    return {
      name,
      cpus: cpus.join(','),
      quotaCores,
      add(pid) {
        for (const directory of directories) write(join(directory, 'cgroup.procs'), String(pid));
      },
      cpuMs: () => Number(read(usage).trim()) / 1e6,
      throttling: () => throttlingOf(read(join(cpu, 'cpu.stat')), 'throttled_time', 1e6),
      runDelayMs: () => runDelayOf(read(join(cpu, 'tasks')).split('\n').filter(Boolean).map(Number)),
    };
  };
  let released = false;
  let count = 0;
  const load = makeGroup('load', loadCpus, null);
  load.add(process.pid);
  return {
    kind: 'cgroup v1',
    description:
      `cgroup v1 (${roots.join(', ')}): harness, load generator, model and PostgreSQL in group "load" on CPU ${loadCpus.join(',')}; ` +
      `each measured server in a group of its own on CPU ${serverCpus.join(',')} with a CFS quota (period ${PERIOD_US / 1000} ms); cpu.shares ${SHARES_V1} each, ${PARENT_SHARES_V1} for the run's parent`,
    label: 'isolated',
    load,
    serverCpus,
    loadCpus,
    serverGroup(label, quotaCores, index = 0) {
      count += 1;
      const cpu = serverCpus[index % serverCpus.length] as number;
      return makeGroup(`${count}-${label.replace(/\W+/g, '-')}`, [cpu], quotaCores);
    },
    loadSideGroup(label) {
      count += 1;
      return makeGroup(`${count}-${label.replace(/\W+/g, '-')}`, loadCpus, null);
    },
    endAll: () => endProcesses(parents[0] as string),
    release() {
      if (released) return;
      released = true;
      for (let index = 0; index < roots.length; index += 1)
        drainAndRemove(parents[index] as string, roots[index] as string);
    },
  };
}

/** The cgroup v2 groups: one directory under the unified hierarchy, the cpu and cpuset controllers enabled for it. */
function setUpV2(root: string): Isolation {
  removeStale([root]);
  const parent = join(root, `${PREFIX}${process.pid}`);
  const controllers = read(join(root, 'cgroup.controllers')).split(/\s+/);
  if (!controllers.includes('cpu') || !controllers.includes('cpuset'))
    return notIsolated('the cgroup v2 cpu and cpuset controllers are not available');
  write(join(root, 'cgroup.subtree_control'), '+cpu +cpuset');
  mkdirSync(parent);
  write(join(parent, 'cgroup.subtree_control'), '+cpu +cpuset');
  write(join(parent, 'cpu.weight'), String(PARENT_WEIGHT_V2));
  const allCpus = parseCpuList(read(join(root, 'cpuset.cpus.effective')));
  const { server: serverCpus, load: loadCpus } = splitCpus(allCpus);
  const makeGroup = (name: string, cpus: number[], quotaCores: number | null): CpuGroup => {
    const directory = join(parent, name);
    mkdirSync(directory);
    write(join(directory, 'cpuset.cpus'), cpus.join(','));
    write(join(directory, 'cpu.weight'), String(WEIGHT_V2));
    if (quotaCores !== null) write(join(directory, 'cpu.max'), `${Math.round(quotaCores * PERIOD_US)} ${PERIOD_US}`);
    return {
      name,
      cpus: cpus.join(','),
      quotaCores,
      add: (pid) => write(join(directory, 'cgroup.procs'), String(pid)),
      throttling: () => throttlingOf(read(join(directory, 'cpu.stat')), 'throttled_usec', 1000),
      runDelayMs: () => runDelayOf(read(join(directory, 'cgroup.threads')).split('\n').filter(Boolean).map(Number)),
      cpuMs() {
        const line = read(join(directory, 'cpu.stat'))
          .split('\n')
          .find((entry) => entry.startsWith('usage_usec '));
        return Number(line?.split(' ')[1]) / 1000;
      },
    };
  };
  let released = false;
  let count = 0;
  const load = makeGroup('load', loadCpus, null);
  load.add(process.pid);
  return {
    kind: 'cgroup v2',
    description:
      `cgroup v2 (${parent}): harness, load generator, model and PostgreSQL in group "load" on CPU ${loadCpus.join(',')}; ` +
      `each measured server in a group of its own on CPU ${serverCpus.join(',')} with cpu.max (period ${PERIOD_US / 1000} ms); cpu.weight ${WEIGHT_V2} each, ${PARENT_WEIGHT_V2} for the run's parent`,
    label: 'isolated',
    load,
    serverCpus,
    loadCpus,
    serverGroup(label, quotaCores, index = 0) {
      count += 1;
      const cpu = serverCpus[index % serverCpus.length] as number;
      return makeGroup(`${count}-${label.replace(/\W+/g, '-')}`, [cpu], quotaCores);
    },
    loadSideGroup(label) {
      count += 1;
      return makeGroup(`${count}-${label.replace(/\W+/g, '-')}`, loadCpus, null);
    },
    endAll: () => endProcesses(parent),
    release() {
      if (released) return;
      released = true;
      drainAndRemove(parent, root);
    },
  };
}

let current: Isolation | undefined;

/**
 * Sets up the isolation of this harness run once (later calls return the same), or says why there is none:
 * not root, no writable CPU controllers, or `HERMES_BENCH_ISOLATION=none`. The harness process moves into the load
 * group, so everything it starts is born there; the groups go at exit, SIGINT and SIGTERM.
 */
export function setUpIsolation(): Isolation {
  if (current) return current;
  if (process.env.HERMES_BENCH_ISOLATION === 'none') current = notIsolated('HERMES_BENCH_ISOLATION=none');
  else if (process.getuid?.() !== 0) current = notIsolated('not running as root');
  else {
    try {
      current = existsSync('/sys/fs/cgroup/cgroup.controllers') ? setUpV2('/sys/fs/cgroup') : setUpV1();
    } catch (error) {
      current = notIsolated(
        `the CPU groups could not be made (${error instanceof Error ? error.message : String(error)})`,
      );
    }
  }
  const isolation = current;
  if (isolation.kind !== 'none') {
    process.once('exit', () => isolation.release());
    for (const signal of ['SIGINT', 'SIGTERM'] as const)
      process.once(signal, () => {
        // The harness's children (servers, model, PostgreSQL) are in its groups: they end with it.
        void isolation
          .endAll()
          .catch(() => {})
          .finally(() => {
            isolation.release();
            process.exit(signal === 'SIGINT' ? 130 : 143);
          });
      });
  }
  return isolation;
}

/** Length of a clock tick in /proc/<pid>/stat (USER_HZ is 100 on Linux). */
const CLOCK_TICK_MS = 10;

/** utime + stime of one process, in ms (10 ms ticks). */
export function processCpuMs(pid: number): number {
  const stat = read(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * CLOCK_TICK_MS;
}

/**
 * The CPU time every live thread of one process has run, in ms at nanosecond resolution: the sum of the first field of
 * `/proc/<pid>/task/<tid>/schedstat` (the scheduler's run time of each thread, in ns), the sum the CPU groups'
 * `cpuacct.usage` and `getrusage` (`process.cpuUsage`) add up too. A thread running at the moment of the read lags by
 * what it ran since the scheduler last accounted it (at most a scheduler tick, as the groups' figure does); `/proc/<pid>/stat`
 * truncates the same time to 10 ms ticks whatever the process does, a quarter of a 40 ms first turn (ADR 0110). A
 * thread that ended is no longer counted (node's threads live as long as the process). Falls back to
 * {@link processCpuMs} where the kernel has no schedstat.
 */
export function processRunTimeMs(pid: number): number {
  let threads: string[];
  try {
    threads = readdirSync(`/proc/${pid}/task`);
  } catch {
    return processCpuMs(pid);
  }
  let nanoseconds = 0;
  for (const thread of threads) {
    try {
      nanoseconds += Number(read(`/proc/${pid}/task/${thread}/schedstat`).split(' ')[0]);
    } catch {
      // The thread ended between the listing and the read (node's threads live as long as the process).
    }
  }
  return nanoseconds > 0 ? nanoseconds / 1e6 : processCpuMs(pid);
}

/**
 * The CPU a measured process has received, in ms: its group's when it has one of its own (every thread and child,
 * nanosecond resolution), else `/proc/<pid>/stat`'s.
 */
export function cpuMeter(pid: number, group: CpuGroup | null): () => number {
  return group ? () => group.cpuMs() : () => processCpuMs(pid);
}
