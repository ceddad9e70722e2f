// An OpenID provider for bfsql's team tests: oidc-provider with the client-credentials grant, issuing JWT
// access tokens for the resources named in its configuration. Usage: node provider.mjs CONFIG.json
//
// CONFIG: {issuer, port, keys: [private JWKs, the signing one first], clients: [{client_id, client_secret,
// scope, claims}], resources: {URL: "scopes it grants"}, ttl: seconds}. Prints "listening" once it accepts requests.
// A client's claims (an object) are added to each access token it gets, as a provider adds a user's groups.
//
// A client that asks for no scope gets a token carrying every scope it holds for the resource (its default
// grant, as Auth0 gives a client-credentials client, or Keycloak its default client scopes); one that asks
// for a scope it does not hold is refused (invalid_scope), as oidc-provider refuses by default.
import { readFileSync } from 'node:fs';
import Provider, { errors } from 'oidc-provider';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const scopes = [...new Set(Object.values(config.resources).flatMap((granted) => granted.split(' ')))];

const held = Object.fromEntries(config.clients.map((client) => [client.client_id, (client.scope || '').split(' ')]));
const extra = Object.fromEntries(config.clients.map((client) => [client.client_id, client.claims || {}]));

// The default grant: the scopes the client holds that the token's resource grants, when the request named none.
function defaultGrant(ctx, token, jwt) {
  Object.assign(jwt.payload, extra[token.clientId] || {});
  if (jwt.payload.scope || !(jwt.payload.aud in config.resources)) {
    return;
  }
  const granted = new Set(config.resources[jwt.payload.aud].split(' '));
  const scope = (held[token.clientId] || []).filter((s) => granted.has(s)).join(' ');
  if (scope) {
    jwt.payload.scope = scope;
  }
}

const provider = new Provider(config.issuer, {
  clients: config.clients.map(({ claims, ...client }) => ({
    ...client,
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: [],
  })),
  jwks: { keys: config.keys },
  scopes,
  formats: { customizers: { jwt: defaultGrant } },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => Object.keys(config.resources)[0],
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resource) => {
        if (!(resource in config.resources)) {
          throw new errors.InvalidTarget();
        }
        return {
          scope: config.resources[resource],
          audience: resource,
          accessTokenTTL: config.ttl,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
});

provider.listen(config.port, '127.0.0.1', () => {
  console.log('listening');
});
