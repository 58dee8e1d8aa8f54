package handlers

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// cspDirectives parses a Content-Security-Policy into directive → sources.
func cspDirectives(csp string) map[string][]string {
	out := map[string][]string{}
	for _, d := range strings.Split(csp, ";") {
		f := strings.Fields(d)
		if len(f) > 0 {
			out[strings.ToLower(f[0])] = f[1:]
		}
	}
	return out
}

// wantPageHeaders checks the headers every HTML page must carry.
func wantPageHeaders(t *testing.T, r response) {
	t.Helper()
	csp := r.header.Get("Content-Security-Policy")
	if csp == "" {
		t.Errorf("%s: got no Content-Security-Policy; want one", r.url.Path)
		return
	}
	d := cspDirectives(csp)
	script, ok := d["script-src"]
	if !ok {
		script = d["default-src"]
	}
	if len(script) == 0 {
		t.Errorf("%s: CSP %q restricts no scripts; want script-src or default-src", r.url.Path, csp)
	}
	for _, src := range script {
		if s := strings.ToLower(src); s == "'unsafe-inline'" || s == "'unsafe-eval'" || s == "*" || s == "data:" {
			t.Errorf("%s: got %s in script-src; want none", r.url.Path, src)
		}
	}
	if got := strings.Join(d["frame-ancestors"], " "); got != "'none'" {
		t.Errorf("%s: got frame-ancestors %q; want 'none'", r.url.Path, got)
	}
	if got := r.header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("%s: got X-Content-Type-Options %q; want nosniff", r.url.Path, got)
	}
	switch got := r.header.Get("Referrer-Policy"); got {
	case "no-referrer", "same-origin", "strict-origin", "strict-origin-when-cross-origin":
	default:
		t.Errorf("%s: got Referrer-Policy %q; want one that keeps URLs on this site", r.url.Path, got)
	}
}

// wantNoStore checks the headers of a response that holds a secret or an
// OAuth code.
func wantNoStore(t *testing.T, r response) {
	t.Helper()
	if got := r.header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("%s: got Cache-Control %q; want no-store", r.url.Path, got)
	}
	if got := r.header.Get("Referrer-Policy"); got != "no-referrer" {
		t.Errorf("%s: got Referrer-Policy %q; want no-referrer", r.url.Path, got)
	}
}

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serverOpts{})
	admin := ts.signIn(t, ada)
	user := ts.signIn(t, uma)
	anon := ts.newClient(t)

	t.Run("every page", func(t *testing.T) {
		var pages []response
		fx := ts.seedConnectorFixtures(t, ts.user(t, uma).ID)
		for _, path := range fx.concreteGETs(t, ts.srv) {
			for _, kind := range requestKinds {
				pages = append(pages, admin.get(t, path, kind.header), user.get(t, path, kind.header), anon.get(t, path, kind.header))
			}
		}
		for _, path := range []string{"/signin", "/signin?next=/users", "/no-such-page", "/healthz", "/readyz", "/static/style.css", "/dev-idp/.well-known/openid-configuration"} {
			pages = append(pages, anon.get(t, path), admin.get(t, path))
		}
		pages = append(pages,
			admin.get(t, "/auth/callback?state=x&code=y"),
			anon.get(t, anon.authorize(t, uma, "")),
			user.formPost(t, "/roles", url.Values{"name": {"nope"}}),
			user.htmxPost(t, "/roles", url.Values{"name": {"nope"}}),
			admin.get(t, "/users/1/role"), // 405
		)
		picker := anon.get(t, "/auth/login")
		pages = append(pages, anon.get(t, picker.location(t)))

		var html int
		for _, r := range pages {
			if !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
				if got := r.header.Get("X-Content-Type-Options"); got != "nosniff" {
					t.Errorf("%s: got X-Content-Type-Options %q; want nosniff", r.url.Path, got)
				}
				continue
			}
			html++
			wantPageHeaders(t, r)
		}
		if html < 30 {
			t.Errorf("checked %d HTML responses; want at least 30", html)
		}
	})

	t.Run("the token-created page is not cached or kept in history", func(t *testing.T) {
		r := user.formPost(t, "/tokens", url.Values{"name": {"headers"}})
		wantStatus(t, r, http.StatusOK)
		wantNoStore(t, r)
		wantPageHeaders(t, r)
		if got, _ := r.doc(t).Find("body").Attr("hx-history"); got != "false" {
			t.Errorf(`got <body hx-history=%q>; want "false"`, got)
		}
	})

	t.Run("the token-created fragment is not cached", func(t *testing.T) {
		r := user.htmxPost(t, "/tokens", url.Values{"name": {"headers htmx"}})
		wantStatus(t, r, http.StatusOK)
		wantNoStore(t, r)
		if isFullPage(r.body) {
			t.Errorf("got a full page; want the tokens panel fragment")
		}
	})

	t.Run("the OAuth callback is not cached or sent as a referrer", func(t *testing.T) {
		c := ts.newClient(t)
		ok := c.get(t, c.authorize(t, uma, ""))
		wantStatus(t, ok, http.StatusSeeOther)
		wantNoStore(t, ok)
		failed := c.get(t, "/auth/callback?state=x&code=y")
		wantStatus(t, failed, http.StatusBadRequest)
		wantNoStore(t, failed)
	})
}
