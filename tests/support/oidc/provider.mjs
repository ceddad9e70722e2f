// An OpenID provider for bfsql's team tests: oidc-provider with the client-credentials grant, issuing JWT
// access tokens for the resources named in its configuration. Usage: node provider.mjs CONFIG.json
//
// CONFIG: {issuer, port, keys: [private JWKs, the signing one first], clients: [{client_id, client_secret,
// scope}], resources: {URL: "scopes it grants"}, ttl: seconds}. Prints "listening" once it accepts requests.
import { readFileSync } from 'node:fs';
import Provider, { errors } from 'oidc-provider';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const scopes = [...new Set(Object.values(config.resources).flatMap((granted) => granted.split(' ')))];

const provider = new Provider(config.issuer, {
  clients: config.clients.map((client) => ({
    ...client,
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: [],
  })),
  jwks: { keys: config.keys },
  scopes,
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
