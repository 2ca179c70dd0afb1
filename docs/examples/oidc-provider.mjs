// A real OpenID provider on http://127.0.0.1:3000 for trying docs/identity-providers.md: oidc-provider
// (the certified Node.js provider; a devDependency here) with the client_credentials grant, resource
// indicators and JWT access tokens for the gateway's resource. It signs with RS256 and the library's
// development keys (it says so on stderr): ES256 would need keys of its own, which the development
// set lacks. Not for production. Stop it with Ctrl-C (or kill its pid).
import Provider from 'oidc-provider';

const PORT = Number(process.env.OIDC_PORT ?? 3000);
const ISSUER = `http://127.0.0.1:${PORT}`;
const RESOURCE = 'https://gateway.example.com/api';

const provider = new Provider(ISSUER, {
  clients: [
    {
      client_id: 'reporter',
      client_secret: 'reporter-secret-change-me',
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
    },
  ],
  scopes: ['members:read', 'checksums:read'],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => RESOURCE,
      useGrantedResource: () => true,
      getResourceServerInfo: () => ({
        scope: 'members:read checksums:read',
        audience: RESOURCE,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
});
provider.listen(PORT, '127.0.0.1', () => console.log(`oidc-provider listening on ${ISSUER}`));
