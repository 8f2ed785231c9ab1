import { type GatewayConnectionOptions, openConnection } from './connection.js';
import { type GatewayClientOptions as BaseOptions, GatewayClientBase, type GatewayRuntime } from './gateway-client.js';
import { zodFrameChecks } from './zod-frame-checks.js';

/** Options of the Node {@link GatewayClient}: spawn a gateway (`{ command, args }`) or attach to one (`{ url, token }`). */
export type GatewayClientOptions = BaseOptions<GatewayConnectionOptions>;

const nodeRuntime: GatewayRuntime<GatewayConnectionOptions> = {
  open: async (options) => openConnection(options),
  checks: zodFrameChecks,
};

/**
 * The gateway client for Node: spawns `hermes gateway` on stdio or attaches to a WebSocket with `ws`, and checks
 * frames with the wire's schemas. Browsers get the same client from the package's `browser` entry.
 */
export class GatewayClient extends GatewayClientBase<GatewayConnectionOptions> {
  /** Creates a client; call {@link GatewayClient.connect} (or use the static `connect`) to open it. */
  constructor(options: GatewayClientOptions) {
    super(options, nodeRuntime);
  }

  /** Creates a client and waits until it is connected (after `gateway.ready` and `client.capabilities`). */
  static async connect(options: GatewayClientOptions): Promise<GatewayClient> {
    const client = new GatewayClient(options);
    await client.connect();
    return client;
  }
}
