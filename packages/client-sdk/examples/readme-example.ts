import { GatewayClient } from '@hermes/client-sdk';

// Spawns `hermes gateway` (stdio). To attach to a server instead: { url: 'ws://127.0.0.1:8642/api/ws', token }.
const client = await GatewayClient.connect({
  connection: { command: 'hermes', args: ['gateway'] },
  handlers: {
    // Kinds without a handler (clarify, sudo, secret here) are declined at once with -32601.
    approval: async (request) => {
      console.log(`approving: ${request.command}`);
      return { choice: 'once' };
    },
  },
});
const session = await client.session.create({});
const turn = await client.startTurn({ session_id: session.session_id, text: 'Tidy the build folder.' });
for await (const event of turn.events) {
  if (event.type === 'message.delta') process.stdout.write(event.payload.text);
  if (event.type === 'tool.start') console.log(`\n[tool] ${event.payload.name}`);
}
console.log(`\n[turn ${(await turn.completed).status}]`);
await client.close();
