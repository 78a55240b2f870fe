// A real OpenID Connect provider upstream of trio_mcp's authorization facade in its tests: oidc-provider with
// dynamic registration off and one pre-registered confidential client (`facade` / `facade-secret`), whose
// redirect URI is any loopback port's /oauth/callback (a native client, RFC 8252 §7.3). Users log in and
// consent through the library's development interactions (any login name, any password).
//
//     node oidc_upstream.mjs    -> prints {"issuer": "http://127.0.0.1:<port>"} on one line, serves until killed
import { createServer } from "node:http";
import Provider from "oidc-provider";

const server = createServer();
server.listen(0, "127.0.0.1", () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: "facade",
        client_secret: "facade-secret",
        application_type: "native",
        redirect_uris: ["http://127.0.0.1/oauth/callback"],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "client_secret_basic",
      },
    ],
    features: { registration: { enabled: false }, devInteractions: { enabled: true } },
    claims: { openid: ["sub"], email: ["email"], profile: ["name"] },
    async findAccount(ctx, id) {
      return { accountId: id, claims: async () => ({ sub: id, email: `${id}@example.test`, name: `User ${id}` }) };
    },
    cookies: { keys: ["test-only-cookie-key"] },
    ttl: { AccessToken: 600, AuthorizationCode: 60, Interaction: 600, Session: 600, Grant: 600 },
  });
  server.on("request", provider.callback());
  process.stdout.write(JSON.stringify({ issuer }) + "\n");
});
