import { type BrowserConnectionOptions, openBrowserConnection } from './browser-connection.js';
import { handFrameChecks } from './frame-checks.js';
import { type GatewayClientOptions as BaseOptions, GatewayClientBase, type GatewayRuntime } from './gateway-client.js';

/** Options of the browser {@link GatewayClient}: `connection` is `{ url, apiKey }` or `{ url, ticket }`. */
export type GatewayClientOptions = BaseOptions<BrowserConnectionOptions>;

const browserRuntime: GatewayRuntime<BrowserConnectionOptions> = {
  open: openBrowserConnection,
  checks: handFrameChecks,
};

/**
 * The gateway client for browsers and webviews: the global `WebSocket`, a ticket instead of the API key in the URL,
 * and no Node module. The same API as the Node client, which spawns or uses `ws`.
 */
export class GatewayClient extends GatewayClientBase<BrowserConnectionOptions> {
  /** Creates a client; call {@link GatewayClient.connect} (or use the static `connect`) to open it. */
  constructor(options: GatewayClientOptions) {
    super(options, browserRuntime);
  }

  /** Creates a client and waits until it is connected (after `gateway.ready` and `client.capabilities`). */
  static async connect(options: GatewayClientOptions): Promise<GatewayClient> {
    const client = new GatewayClient(options);
    await client.connect();
    return client;
  }
}
