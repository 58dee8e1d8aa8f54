package handlers

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"patchbay/db"
)

// Canary values: if one of these shows up where it should not, it leaked.
const (
	canaryClientSecret = "canary-client-secret-5f0c1d7e9a3b"
	canaryCode         = "canary-code-8d2e4f6a1c3b"
	canaryState        = "canary-state-7b9d1f3e5a2c"
	canaryCode2        = "canary-code-two-4a6c8e0b2d"
)

var jwtShape = regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.`)

func TestSecretsNeverLeak(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serverOpts{})
	ctx := context.Background()
	clients := map[string]*client{ada: ts.signIn(t, ada), uma: ts.signIn(t, uma), sam: ts.signIn(t, sam)}
	anon := ts.newClient(t)

	// A connector sign-in provider with a canary client secret.
	if _, err := ts.db.SaveOAuthProvider(ctx, ts.user(t, ada).ID, db.OAuthProvider{
		Name: "canary", DisplayName: "Canary", AuthURL: "https://idp.example/authorize",
		TokenURL: "https://idp.example/token", ClientID: "canary-client",
	}, canaryClientSecret); err != nil {
		t.Fatalf("save provider: %v", err)
	}
	if got, err := ts.db.OAuthProviderSecret(ctx, "canary"); err != nil || got != canaryClientSecret {
		t.Fatalf("provider secret: got %q, %v; want the canary", got, err)
	}

	// API tokens minted through the UI, as a plain form and with htmx.
	newToken := func(t *testing.T, r response) string {
		t.Helper()
		wantStatus(t, r, http.StatusOK)
		secret, _ := r.doc(t).Find(`[data-testid="new-token-secret"]`).Attr("value")
		if !strings.HasPrefix(secret, "pbt_") || len(secret) < 20 {
			t.Fatalf("got token secret %q; want a pbt_ token", secret)
		}
		return secret
	}
	tokens := map[string]string{
		"plain form token": newToken(t, clients[uma].formPost(t, "/tokens", url.Values{"name": {"canary plain"}})),
		"htmx token":       newToken(t, clients[sam].htmxPost(t, "/tokens", url.Values{"name": {"canary htmx"}})),
		"admin token":      newToken(t, clients[ada].formPost(t, "/tokens", url.Values{"name": {"canary admin"}})),
	}

	// Use the tokens, well and badly.
	script := ts.newClient(t)
	for _, secret := range tokens {
		bearer := hdr("Authorization", "Bearer "+secret)
		wantStatus(t, script.get(t, "/api/me", bearer), http.StatusOK)
		script.get(t, "/api/users", bearer)
		script.get(t, "/connectors", bearer)
		script.get(t, "/tokens", bearer)
		wantStatus(t, script.post(t, "/roles", url.Values{"name": {"from-evil"}}, bearer, hdr("Origin", "http://evil.example")), http.StatusForbidden)
		wantStatus(t, script.get(t, "/api/me", hdr("Authorization", "Bearer "+secret+"x")), http.StatusUnauthorized)
		wantStatus(t, script.get(t, "/api/me", hdr("Authorization", "Token "+secret)), http.StatusUnauthorized)
	}
	for _, bad := range []string{
		"Bearer pbt_" + strings.Repeat("A", 43),
		"Bearer " + canaryClientSecret,
		"Basic " + base64.StdEncoding.EncodeToString([]byte("canary:"+canaryClientSecret)),
	} {
		wantStatus(t, script.get(t, "/api/me", hdr("Authorization", bad)), http.StatusUnauthorized)
		if r := script.get(t, "/connectors", hdr("Authorization", bad)); r.status == http.StatusOK {
			t.Errorf("%s on a page: got 200; want refused", strings.Fields(bad)[0])
		}
	}

	// Callbacks carrying codes and states: an unknown state, and a real
	// state with a bogus code that the provider refuses.
	wantStatus(t, anon.get(t, "/auth/callback?code="+canaryCode+"&state="+canaryState), http.StatusBadRequest)
	{
		c := ts.newClient(t)
		cb, _ := url.Parse(c.authorize(t, uma, ""))
		q := cb.Query()
		q.Set("code", canaryCode2)
		cb.RawQuery = q.Encode()
		wantStatus(t, c.get(t, cb.String()), http.StatusBadRequest)
	}

	// Connector secrets typed into the shared-connector and activation
	// forms, with the pages that then show those connectors.
	connectorPages := exerciseConnectorSecrets(t, ts, clients[ada], clients[uma])

	// Every page and error, as everyone.
	everyone := map[string]*client{"anonymous": anon}
	for k, v := range clients {
		everyone[k] = v
	}
	fx := ts.seedConnectorFixtures(t, ts.user(t, uma).ID)
	paths := append(fx.concreteGETs(t, ts.srv), "/signin", "/no-such-page", "/users/1/role", "/healthz", "/readyz", "/tokens/999/revoke")
	paths = append(paths, connectorPages...)
	for _, c := range everyone {
		for _, path := range paths {
			for _, kind := range requestKinds {
				c.get(t, path, kind.header)
			}
		}
		for _, kind := range requestKinds {
			c.post(t, "/roles", withToken(url.Values{"name": {"Not A Valid Name"}}, c.csrf), kind.header)
			c.post(t, "/roles", withToken(url.Values{"name": {"support"}}, c.csrf), kind.header)
			c.post(t, "/users/999/role", withToken(url.Values{"role": {"user"}}, c.csrf), kind.header)
			c.post(t, "/tokens/999/revoke", withToken(nil, c.csrf), kind.header)
			c.post(t, "/tokens", withToken(url.Values{"name": {""}}, c.csrf), kind.header)
		}
	}

	sessions := map[string]string{}
	for k, c := range clients {
		sessions[k+" session"] = c.session
	}

	// What may never appear anywhere.
	never := map[string]string{
		"provider client secret":  canaryClientSecret,
		"sign-in client secret":   ts.oidc.ClientSecret,
		"canary code":             canaryCode,
		"canary state":            canaryState,
		"canary code (real flow)": canaryCode2,
	}
	for name, v := range connectorCanaries {
		never[name] = v
	}
	exchanges := ts.rec.all()
	if len(exchanges) < 250 {
		t.Fatalf("recorded %d responses; want the whole exercise (at least 250)", len(exchanges))
	}
	for _, e := range exchanges {
		text := fmt.Sprintf("%v\n%s", e.header, e.body)
		for name, v := range never {
			if strings.Contains(text, v) {
				t.Errorf("%s %s (%d): got the %s in the response; want it never shown", e.method, e.url, e.status, name)
			}
		}
		if jwtShape.MatchString(text) {
			t.Errorf("%s %s (%d): got a JWT in the response; want none", e.method, e.url, e.status)
		}
		// Session ids travel only in Set-Cookie.
		for name, v := range sessions {
			if strings.Contains(e.body, v) {
				t.Errorf("%s %s (%d): got the %s in the body; want it only in Set-Cookie", e.method, e.url, e.status, name)
			}
		}
	}

	t.Run("each API token appears only in the response that created it", func(t *testing.T) {
		for name, secret := range tokens {
			for _, needle := range []string{secret, strings.TrimPrefix(secret, "pbt_")} {
				var seen []string
				for _, e := range exchanges {
					if strings.Contains(fmt.Sprintf("%v\n%s", e.header, e.body), needle) {
						seen = append(seen, fmt.Sprintf("%s %s", e.method, e.url))
					}
				}
				if len(seen) != 1 || seen[0] != "POST "+ts.URL+"/tokens" {
					t.Errorf("%s: got it in %q; want only in its POST /tokens response", name, seen)
				}
			}
		}
	})

	t.Run("the logs hold no secret", func(t *testing.T) {
		logs := ts.logs.String()
		if !strings.Contains(logs, "sign-in failed") || !strings.Contains(logs, "path=/api/me") {
			t.Fatalf("the captured logs look empty; want request and sign-in lines:\n%s", logs)
		}
		all := map[string]string{}
		for k, v := range never {
			all[k] = v
		}
		for k, v := range tokens {
			all[k] = v
			all[k+" without prefix"] = strings.TrimPrefix(v, "pbt_")
		}
		for k, v := range sessions {
			all[k] = v
		}
		for k, c := range clients {
			all[k+" CSRF token"] = c.csrf
		}
		for name, v := range all {
			if strings.Contains(logs, v) {
				t.Errorf("got the %s in the logs; want it never logged", name)
			}
		}
		if jwtShape.MatchString(logs) {
			t.Error("got a JWT in the logs; want none")
		}
	})
}
