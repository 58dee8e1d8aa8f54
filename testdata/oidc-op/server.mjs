// A real OpenID Provider for Patchbay's browser sign-in tests.
//
// It is node-oidc-provider (a certified OP implementation) with a fixed
// confidential client and a fixed test account. The Go harness in
// cmd/patchbay/internal/realop starts it; see README.md beside this file.
//
// Everything is configured at start, from flags or the matching OP_*
// environment variables (flags win). The process listens on loopback, and
// with --port 0 (the default) the kernel picks a free port, so tests never race
// for one. Once it accepts connections it prints one line on stdout:
//
//	OIDC-OP-READY {"issuer":"http://127.0.0.1:PORT","port":PORT}
//
// The login and consent pages are our own minimal ones, not the library's
// devInteractions: devInteractions accepts any login without a password, and
// the tests need stable element ids and a real password check.

import { generateKeyPairSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

import Provider from 'oidc-provider';

const { values: args } = parseArgs({
  options: {
    host: { type: 'string' },
    port: { type: 'string' },
    issuer: { type: 'string' },
    'client-id': { type: 'string' },
    'client-secret': { type: 'string' },
    'redirect-uri': { type: 'string', multiple: true },
    'post-logout-redirect-uri': { type: 'string', multiple: true },
    'token-endpoint-auth-method': { type: 'string' },
    'user-login': { type: 'string' },
    'user-password': { type: 'string' },
    'user-sub': { type: 'string' },
    'user-email': { type: 'string' },
    'user-name': { type: 'string' },
    'exit-on-stdin-close': { type: 'boolean' },
  },
  strict: true,
});

// list splits an environment variable holding several URIs.
const list = (v) => (v ? v.split(/[\s,]+/).filter(Boolean) : []);

const host = args.host ?? process.env.OP_HOST ?? '127.0.0.1';
const port = Number(args.port ?? process.env.OP_PORT ?? 0);
const client = {
  client_id: args['client-id'] ?? process.env.OP_CLIENT_ID ?? 'patchbay-test',
  client_secret: args['client-secret'] ?? process.env.OP_CLIENT_SECRET ?? 'patchbay-test-secret',
  redirect_uris: args['redirect-uri'] ?? list(process.env.OP_REDIRECT_URIS),
  post_logout_redirect_uris: args['post-logout-redirect-uri'] ?? list(process.env.OP_POST_LOGOUT_REDIRECT_URIS),
  response_types: ['code'],
  grant_types: ['authorization_code'],
  token_endpoint_auth_method: args['token-endpoint-auth-method']
    ?? process.env.OP_TOKEN_ENDPOINT_AUTH_METHOD ?? 'client_secret_basic',
};
const login = args['user-login'] ?? process.env.OP_USER_LOGIN ?? 'alice@example.test';
const user = {
  login,
  password: args['user-password'] ?? process.env.OP_USER_PASSWORD ?? 'alice-password',
  sub: args['user-sub'] ?? process.env.OP_USER_SUB ?? 'alice',
  email: args['user-email'] ?? process.env.OP_USER_EMAIL ?? login,
  name: args['user-name'] ?? process.env.OP_USER_NAME ?? 'Alice Example',
};

if (client.redirect_uris.length === 0) {
  console.error('oidc-op: at least one --redirect-uri (or OP_REDIRECT_URIS) is required');
  process.exit(2);
}

// Fresh signing and cookie keys on every start: nothing here is a secret worth
// keeping, and a fixed key in the repository would look like one.
const signingKey = {
  ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }),
  kid: randomBytes(8).toString('hex'),
  alg: 'RS256',
  use: 'sig',
};

const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => ({
  '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;',
}[c]));

// page renders every HTML page of the OP. data-op-page on <body> tells the Go
// harness which page the browser is on without depending on wording.
const page = (name, title, body) => `<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${esc(title)}</title></head>
<body data-op-page="${esc(name)}">
<h1>${esc(title)}</h1>
${body}
</body>
</html>
`;

const configuration = {
  clients: [client],
  // PKCE on every authorization request, also for confidential clients
  // (the library's default only forces it on public ones).
  pkce: { required: () => true },
  scopes: ['openid', 'email', 'profile'],
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'preferred_username'],
  },
  // Put the granted scope claims into the ID token as well, as most hosted
  // OPs do; by default the library only serves them from userinfo in the
  // code flow, and an RP that reads the ID token would see no email.
  conformIdTokenClaims: false,
  async findAccount(_ctx, sub) {
    if (sub !== user.sub) return undefined;
    return {
      accountId: user.sub,
      async claims() {
        return {
          sub: user.sub,
          email: user.email,
          email_verified: true,
          name: user.name,
          preferred_username: user.login,
        };
      },
    };
  },
  jwks: { keys: [signingKey] },
  cookies: {
    keys: [randomBytes(32).toString('hex')],
    // Ports do not separate cookies, so the OP's cookies and those of an RP on
    // the same loopback host share one jar: prefixed names avoid clashes.
    names: { session: 'op_session', interaction: 'op_interaction', resume: 'op_interaction_resume' },
  },
  features: {
    devInteractions: { enabled: false },
    // Own logout pages: the library's defaults load a web font from the
    // internet, which the test machines cannot reach.
    rpInitiatedLogout: {
      enabled: true,
      async logoutSource(ctx, form) {
        ctx.type = 'html';
        ctx.body = page('logout', 'Sign out', `${form}
<button id="op-logout" type="submit" form="op.logoutForm" name="logout" value="yes">Sign out</button>
<button id="op-stay" type="submit" form="op.logoutForm">Stay signed in</button>`);
      },
      async postLogoutSuccessSource(ctx) {
        ctx.type = 'html';
        ctx.body = page('logged-out', 'Signed out', '<p id="op-logged-out">You are signed out.</p>');
      },
    },
  },
  interactions: {
    url: (_ctx, interaction) => `/interaction/${interaction.uid}`,
  },
  async renderError(ctx, out) {
    ctx.type = 'html';
    ctx.body = page('error', 'Error', `<p id="op-error">${esc(out.error)}: ${esc(out.error_description)}</p>`);
  },
  // Also silences the library's "you should change this" notices.
  clientBasedCORS: () => false,
  ttl: {
    AccessToken: 3600,
    AuthorizationCode: 60,
    IdToken: 3600,
    Interaction: 600,
    Session: 3600,
    Grant: 3600,
  },
};

const loginPage = (uid, params, error) => page('login', 'Sign in', `
${error ? `<p id="op-error" role="alert">${esc(error)}</p>` : ''}
<form id="op-login-form" method="post" action="/interaction/${esc(uid)}/login" autocomplete="off">
  <label>Email <input id="op-username" name="login" type="text" value="${esc(params.login_hint)}" autofocus></label>
  <label>Password <input id="op-password" name="password" type="password"></label>
  <button id="op-submit" type="submit">Sign in</button>
</form>
<a id="op-cancel" href="/interaction/${esc(uid)}/abort">Cancel</a>`);

const consentPage = (uid, clientId, details) => page('consent', 'Authorize', `
<p>Client <code id="op-client">${esc(clientId)}</code> asks for:</p>
<ul id="op-scopes">${(details.missingOIDCScope ?? []).map((s) => `<li>${esc(s)}</li>`).join('')}</ul>
<form id="op-consent-form" method="post" action="/interaction/${esc(uid)}/confirm">
  <button id="op-approve" type="submit">Allow</button>
</form>
<form method="post" action="/interaction/${esc(uid)}/abort">
  <button id="op-deny" type="submit">Deny</button>
</form>`);

const readForm = async (req) => {
  let body = '';
  for await (const chunk of req) {
    body += chunk;
    if (body.length > 64 * 1024) throw new Error('form too large');
  }
  return new URLSearchParams(body);
};

const sameString = (a, b) => {
  const x = Buffer.from(String(a));
  const y = Buffer.from(String(b));
  return x.length === y.length && timingSafeEqual(x, y);
};

const sendHTML = (res, status, html) => {
  res.statusCode = status;
  res.setHeader('Content-Type', 'text/html; charset=utf-8');
  res.setHeader('Cache-Control', 'no-store');
  res.end(html);
};

async function handleInteraction(provider, req, res, uid, action) {
  const details = await provider.interactionDetails(req, res);
  if (details.uid !== uid) {
    sendHTML(res, 400, page('error', 'Error', '<p id="op-error">interaction mismatch</p>'));
    return;
  }
  const { prompt, params, session } = details;

  if (req.method === 'GET' && !action) {
    if (prompt.name === 'login') sendHTML(res, 200, loginPage(uid, params));
    else if (prompt.name === 'consent') sendHTML(res, 200, consentPage(uid, params.client_id, prompt.details));
    else sendHTML(res, 501, page('error', 'Error', `<p id="op-error">unsupported prompt ${esc(prompt.name)}</p>`));
    return;
  }

  if (action === 'abort') {
    await provider.interactionFinished(req, res, {
      error: 'access_denied',
      error_description: 'End-User aborted interaction',
    }, { mergeWithLastSubmission: false });
    return;
  }

  if (req.method !== 'POST') {
    sendHTML(res, 405, page('error', 'Error', '<p id="op-error">method not allowed</p>'));
    return;
  }
  const form = await readForm(req);

  if (action === 'login' && prompt.name === 'login') {
    if (!sameString(form.get('login'), user.login) || !sameString(form.get('password'), user.password)) {
      sendHTML(res, 401, loginPage(uid, { login_hint: form.get('login') }, 'Invalid email or password.'));
      return;
    }
    await provider.interactionFinished(req, res, {
      login: { accountId: user.sub },
    }, { mergeWithLastSubmission: false });
    return;
  }

  if (action === 'confirm' && prompt.name === 'consent') {
    // Grant exactly what the prompt says is missing, as a user pressing
    // "Allow" would.
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    const d = prompt.details;
    if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
    if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(d.missingResourceScopes ?? {})) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
    return;
  }

  sendHTML(res, 400, page('error', 'Error', `<p id="op-error">unexpected ${esc(action)} for prompt ${esc(prompt.name)}</p>`));
}

const server = createServer();
server.listen(port, host, () => {
  const actualPort = server.address().port;
  // The issuer is only known once the port is, so the provider is built here.
  const issuer = args.issuer ?? process.env.OP_ISSUER ?? `http://${host}:${actualPort}`;
  const provider = new Provider(issuer, configuration);
  const callback = provider.callback();
  const interactionPath = /^\/interaction\/([\w-]+)(?:\/(login|confirm|abort))?$/;

  server.on('request', (req, res) => {
    const started = Date.now();
    res.on('finish', () => {
      console.error(`oidc-op: ${req.method} ${req.url.split('?')[0]} ${res.statusCode} ${Date.now() - started}ms`);
    });
    const m = new URL(req.url, issuer).pathname.match(interactionPath);
    if (!m) {
      callback(req, res);
      return;
    }
    handleInteraction(provider, req, res, m[1], m[2]).catch((err) => {
      console.error('oidc-op: interaction failed:', err);
      if (!res.headersSent) {
        sendHTML(res, err.statusCode ?? 500, page('error', 'Error', `<p id="op-error">${esc(err.name)}: ${esc(err.message)}</p>`));
      } else {
        res.end();
      }
    });
  });

  console.log(`OIDC-OP-READY ${JSON.stringify({ issuer, port: actualPort })}`);
});

const stop = () => {
  server.close();
  server.closeAllConnections();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
if (args['exit-on-stdin-close']) {
  // The parent holds our stdin open; EOF means it is gone (even if it was
  // SIGKILLed), so exit rather than linger as an orphan.
  process.stdin.on('end', stop);
  process.stdin.on('error', stop);
  process.stdin.resume();
}
