package handlers

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestSignInFailures(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serverOpts{})
	cookieName := ts.srv.sessionCookieName()

	// wantFailedSignIn checks the callback's answer and that the browser
	// ended up without a session.
	wantFailedSignIn := func(t *testing.T, c *client, r response, reason string) {
		t.Helper()
		wantStatus(t, r, http.StatusBadRequest)
		if line := ts.logLine(t, r, "sign-in failed"); !strings.Contains(line, reason) {
			t.Errorf("got log line %q; want the reason %q", line, reason)
		}
		msg := r.doc(t).Find(`[data-testid="error-message"]`).Text()
		if !strings.Contains(msg, "Sign-in did not complete") {
			t.Errorf("got message %q; want it to say sign-in did not complete", msg)
		}
		if ck := r.cookie(cookieName); ck != nil && ck.Value != "" {
			t.Errorf("got Set-Cookie %s=%q; want no session", ck.Name, ck.Value)
		}
		if got := c.whoAmI(t); got != "" {
			t.Errorf("got signed in as %q; want signed out", got)
		}
	}
	// callbackWith returns a callback URL with query parameters set or, for
	// an empty value, removed.
	callbackWith := func(t *testing.T, cb string, set map[string]string) string {
		t.Helper()
		u, err := url.Parse(cb)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		for k, v := range set {
			if v == "" {
				q.Del(k)
			} else {
				q.Set(k, v)
			}
		}
		u.RawQuery = q.Encode()
		return u.String()
	}

	t.Run("wrong state", func(t *testing.T) {
		c := ts.newClient(t)
		cb := c.authorize(t, uma, "")
		wantFailedSignIn(t, c, c.get(t, callbackWith(t, cb, map[string]string{"state": "not-the-state"})), "unknown or used state")
	})

	t.Run("missing state", func(t *testing.T) {
		c := ts.newClient(t)
		cb := c.authorize(t, uma, "")
		wantFailedSignIn(t, c, c.get(t, callbackWith(t, cb, map[string]string{"state": ""})), "callback without state")
	})

	t.Run("missing code", func(t *testing.T) {
		c := ts.newClient(t)
		cb := c.authorize(t, uma, "")
		wantFailedSignIn(t, c, c.get(t, callbackWith(t, cb, map[string]string{"code": ""})), "callback without code")
	})

	t.Run("reused state and code", func(t *testing.T) {
		c := ts.newClient(t)
		cb := c.authorize(t, uma, "")
		flow := c.cookieValue("patchbay_signin")
		wantStatus(t, c.get(t, cb), http.StatusSeeOther) // the real sign-in works once
		replay := ts.newClient(t)
		replay.setCookie("patchbay_signin", flow)
		wantFailedSignIn(t, replay, replay.get(t, cb), "unknown or used state")
	})

	t.Run("flow cookie from another browser", func(t *testing.T) {
		// The attacker's callback URL, opened in the victim's browser, which
		// started a sign-in of its own.
		attacker := ts.newClient(t)
		cb := attacker.authorize(t, sam, "")
		victim := ts.newClient(t)
		wantStatus(t, victim.get(t, "/auth/login"), http.StatusFound)
		wantFailedSignIn(t, victim, victim.get(t, cb), "flow began in another browser")
	})

	t.Run("no flow cookie", func(t *testing.T) {
		attacker := ts.newClient(t)
		cb := attacker.authorize(t, sam, "")
		victim := ts.newClient(t)
		wantFailedSignIn(t, victim, victim.get(t, cb), "flow began in another browser")
	})

	t.Run("provider says access_denied", func(t *testing.T) {
		c := ts.newClient(t)
		r := c.get(t, "/auth/login")
		picker := c.get(t, r.location(t))
		action, form := pickerForm(t, picker, "") // the cancel button
		back := c.post(t, action, form)
		wantStatus(t, back, http.StatusFound)
		cb := back.location(t)
		if u, _ := url.Parse(cb); u.Query().Get("error") != "access_denied" {
			t.Fatalf("provider redirected to %s; want error=access_denied", cb)
		}
		wantFailedSignIn(t, c, c.get(t, cb), `provider returned error \"access_denied\"`)
	})

	t.Run("next cannot leave the site", func(t *testing.T) {
		for _, next := range []string{
			"//evil.example",
			"https://evil.example",
			"/\\evil.example",
			"\\\\evil.example",
			"/\t/evil.example",
			"/\n/evil.example",
			"/\r\n/evil.example",
			"\t//evil.example",
			"javascript:alert(1)",
			"http:evil.example",
			"/%2F%2Fevil.example",
		} {
			t.Run(next, func(t *testing.T) {
				c := ts.newClient(t)
				cb := c.get(t, c.authorize(t, uma, next))
				wantStatus(t, cb, http.StatusSeeOther)
				wantSameSite(t, ts, cb.header.Get("Location"))

				// The sign-in page's link carries only a same-site next too.
				page := ts.newClient(t).get(t, "/signin?next="+url.QueryEscape(next))
				wantStatus(t, page, http.StatusOK)
				href, _ := page.doc(t).Find(`[data-testid="sign-in-link"]`).Attr("href")
				link, err := url.Parse(href)
				if err != nil {
					t.Fatalf("sign-in link %q: %v", href, err)
				}
				if n := link.Query().Get("next"); n != "" {
					wantSameSite(t, ts, n)
				}
			})
		}
	})

	t.Run("a same-site next is kept", func(t *testing.T) {
		c := ts.newClient(t)
		cb := c.get(t, c.authorize(t, uma, "/tokens?tab=1"))
		wantStatus(t, cb, http.StatusSeeOther)
		if got := cb.header.Get("Location"); got != "/tokens?tab=1" {
			t.Errorf("got Location %q; want /tokens?tab=1", got)
		}
	})
}

// wantSameSite resolves a redirect target the way a browser does (tabs and
// newlines removed, backslashes read as slashes) and fails unless it stays
// on the test server.
func wantSameSite(t *testing.T, ts *testServer, loc string) {
	t.Helper()
	b := strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		if r == '\\' {
			return '/'
		}
		return r
	}, strings.TrimSpace(loc))
	u, err := ts.base.Parse(b)
	if err != nil {
		t.Fatalf("redirect %q: %v", loc, err)
	}
	if u.Scheme != ts.base.Scheme || u.Host != ts.base.Host {
		t.Errorf("redirect %q leads to %s; want a path on %s", loc, u, ts.base.Host)
	}
}
