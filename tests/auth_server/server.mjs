// A real authorization server for trio_mcp's end-to-end tests: oauth2-mock-server (real key pairs, signed
// JWTs, JWKS, discovery, authorization code + PKCE, refresh tokens), with what MCP needs added through its
// documented hooks: RFC 8707 audiences, scopes carried from the authorization request, refresh-token
// rotation, RFC 9207 `iss`, RFC 7662 introspection of the tokens it issued, and DPoP-bound tokens
// (RFC 9449: the proof checked, `cnf.jkt` set, token_type DPoP).
//
//     node server.mjs            -> prints {"issuer": "http://127.0.0.1:<port>"} on one line, serves until killed
//
// Test-only token request parameters: test_exp_offset (seconds from now for `exp`, e.g. -120), test_iss; and
// the routes POST /test/rotate {kid} and POST /test/token {kid, aud, scope} (key rotation).
import { createHash, createPublicKey, verify } from "node:crypto";
import { createLocalJWKSet, jwtVerify } from "jose";
import { Events, OAuth2Server } from "oauth2-mock-server";

const server = new OAuth2Server(undefined, undefined, { endpoints: { introspect: "/builtin-introspect" } });
await server.issuer.keys.generate("RS256");
await server.start(0, "127.0.0.1");
server.issuer.url = `http://127.0.0.1:${server.address().port}`;
const issuer = server.issuer.url;
const tokenEndpoint = `${issuer}/token`;

const grants = new Map(); // authorization code or refresh token -> { scope, resource, jkt }

const b64 = (data) => Buffer.from(data).toString("base64url");
const json = (part) => JSON.parse(Buffer.from(part, "base64url").toString("utf8"));

function thumbprint(jwk) {
  const members = jwk.kty === "EC" ? { crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y } : { e: jwk.e, kty: jwk.kty, n: jwk.n };
  return b64(createHash("sha256").update(JSON.stringify(members)).digest());
}

// The DPoP proof of a token request: its key's thumbprint, or an error (RFC 9449 §4.3; ES256 only).
function checkProof(proof) {
  const parts = proof.split(".");
  if (parts.length !== 3) return { error: "malformed proof" };
  const header = json(parts[0]);
  const claims = json(parts[1]);
  if (header.typ !== "dpop+jwt" || header.alg !== "ES256" || !header.jwk || header.jwk.d) return { error: "bad header" };
  const key = createPublicKey({ key: header.jwk, format: "jwk" });
  const signed = verify("sha256", Buffer.from(`${parts[0]}.${parts[1]}`), { key, dsaEncoding: "ieee-p1363" },
    Buffer.from(parts[2], "base64url"));
  if (!signed) return { error: "bad signature" };
  if (claims.htm !== "POST" || claims.htu !== tokenEndpoint) return { error: "htm/htu" };
  if (typeof claims.jti !== "string" || Math.abs(Date.now() / 1000 - claims.iat) > 300) return { error: "jti/iat" };
  return { jkt: thumbprint(header.jwk) };
}

server.service.on(Events.BeforeWellKnownOpenIdConfiguration, (metadata) => {
  Object.assign(metadata.body, {
    scopes_supported: ["mcp:read", "mcp:write", "mcp:admin", "offline_access"],
    grant_types_supported: ["authorization_code", "refresh_token", "client_credentials"],
    dpop_signing_alg_values_supported: ["ES256"],
    authorization_response_iss_parameter_supported: true,
  });
});

server.service.on(Events.BeforeAuthorizeRedirect, (redirect, req) => {
  const query = new URL(req.url, issuer).searchParams;
  grants.set(redirect.url.searchParams.get("code"), { scope: query.get("scope") ?? "", resource: query.get("resource") });
  redirect.url.searchParams.set("iss", issuer);
});

server.service.on(Events.BeforeTokenSigning, (token, req) => {
  req.built = (req.built ?? 0) + 1;
  if (req.built > 1) return; // the ID token that follows the access token
  const body = req.body;
  const previous = grants.get(body.code ?? body.refresh_token) ?? {};
  req.grant = {
    scope: body.scope ?? previous.scope ?? "",
    resource: body.resource ?? previous.resource,
    jkt: previous.jkt,
  };
  if (req.headers.dpop) {
    const checked = checkProof(String(req.headers.dpop));
    req.proofError = checked.error;
    if (previous.jkt && checked.jkt !== previous.jkt) req.proofError = "the refresh token is bound to another key";
    req.grant.jkt = checked.jkt;
  }
  token.payload.scope = req.grant.scope;
  if (req.grant.resource) token.payload.aud = req.grant.resource;
  token.payload.client_id = body.client_id;
  if (req.grant.jkt) token.payload.cnf = { jkt: req.grant.jkt };
  if (body.test_exp_offset) token.payload.exp = Math.floor(Date.now() / 1000) + Number(body.test_exp_offset);
  if (body.test_iss) token.payload.iss = body.test_iss;
});

server.service.on(Events.BeforeResponse, (response, req) => {
  const body = req.body;
  if (body.grant_type === "refresh_token" && !grants.has(body.refresh_token)) {
    response.statusCode = 400;
    response.body = { error: "invalid_grant", error_description: "unknown or already used refresh token" };
    return;
  }
  if (req.proofError) {
    response.statusCode = 400;
    response.body = { error: "invalid_dpop_proof", error_description: req.proofError };
    return;
  }
  grants.delete(body.code ?? body.refresh_token); // codes are single-use, refresh tokens rotate
  if (response.body.refresh_token) grants.set(response.body.refresh_token, req.grant);
  if (req.grant) response.body.scope = req.grant.scope;
  if (req.grant?.jkt) response.body.token_type = "DPoP";
  if (body.test_exp_offset) response.body.expires_in = Math.max(Number(body.test_exp_offset), 1);
});

const keys = () => createLocalJWKSet({ keys: server.issuer.keys.toJSON() });
server.service.addRoute("POST", "/introspect", async (req, res) => {
  let answer = { active: false };
  try {
    const { payload } = await jwtVerify(String(req.body?.token ?? ""), keys(), { issuer });
    answer = { active: true, ...payload };
  } catch {
    // expired, tampered or not ours: inactive
  }
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify(answer));
});

// Test-only: add a signing key with a given kid (key rotation), and sign a token with a chosen key.
server.service.addRoute("POST", "/test/rotate", async (req, res) => {
  await server.issuer.keys.generate("RS256", { kid: String(req.body?.kid) });
  res.setHeader("content-type", "application/json");
  res.end("{}");
});
server.service.addRoute("POST", "/test/token", async (req, res) => {
  const { kid, aud, scope } = req.body ?? {};
  const token = await server.issuer.buildToken({
    kid, scopesOrTransform: (_header, payload) => Object.assign(payload, { aud, scope, sub: "rotated" }),
  });
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify({ access_token: token }));
});

process.stdout.write(`${JSON.stringify({ issuer })}\n`);
process.on("SIGTERM", async () => { await server.stop(); process.exit(0); });
