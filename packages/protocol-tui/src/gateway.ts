import { GatewayCore } from './gateway-core.js';
import type { GatewayOptions } from './gateway-state.js';
import type { Transport } from './wire/index.js';

export type { GatewayOptions } from './gateway-state.js';

/** A running gateway: serve connections over any transport, and shut down per §1.6. */
export interface Gateway {
  /** 16 lowercase hex, random per process start (§1.5). */
  readonly replayEpoch: string;
  /** True once the shutdown sequence started. */
  readonly retiring: boolean;
  /** Serves one connection; sends `gateway.ready` first. */
  connect(transport: Transport): void;
  /** Live runtime ids, in creation order (diagnostics and tests). */
  liveSessionIds(): string[];
  /** Shutdown steps 1–5 (§1.6); the caller exits the process afterwards. */
  shutdown(): Promise<void>;
  /** The longest inbound frame a transport reads (`tui_gateway.max_frame_bytes`, default 16 MiB). */
  readonly maxFrameBytes: number;
}

/** Creates a gateway on an agent host (spec tui-gateway.md). */
export function createGateway(options: GatewayOptions): Gateway {
  const core = new GatewayCore(options);
  // A client opens a session and types its first prompt meanwhile; its reply need not wait for the model's package.
  setImmediate(() => void options.host.warmModel());
  return {
    get replayEpoch() {
      return core.replayEpoch;
    },
    get retiring() {
      return core.retiring;
    },
    connect(transport) {
      core.connect(transport);
    },
    liveSessionIds: () => [...core.sessions.keys()],
    shutdown: () => core.shutdown(),
    get maxFrameBytes() {
      return core.maxFrameBytes();
    },
  };
}
