package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func TestSessions(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serverOpts{})
	ctx := context.Background()
	cookieName := ts.srv.sessionCookieName()
	sessionExists := func(t *testing.T, token string) bool {
		t.Helper()
		ok, err := ts.db.SessionExists(ctx, token)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}

	t.Run("sign-in replaces a planted session cookie", func(t *testing.T) {
		c := ts.newClient(t)
		c.setCookie(cookieName, "planted-by-an-attacker")
		c.signIn(t, uma)
		if c.session == "planted-by-an-attacker" {
			t.Fatalf("got session %q after sign-in; want a fresh one", c.session)
		}
		replay := ts.newClient(t)
		replay.setCookie(cookieName, "planted-by-an-attacker")
		if got := replay.whoAmI(t); got != "" {
			t.Errorf("planted cookie: got signed in as %q; want signed out", got)
		}
	})

	t.Run("sign-in ends a live session planted in the browser", func(t *testing.T) {
		// An attacker signs in, then plants their own session in the victim's browser.
		attacker := ts.signIn(t, sam)
		victim := ts.newClient(t)
		victim.setCookie(cookieName, attacker.session)
		victim.signIn(t, uma)
		if victim.session == attacker.session {
			t.Fatal("got the attacker's session id after sign-in; want a fresh one")
		}
		if sessionExists(t, attacker.session) {
			t.Error("planted session: got still stored; want ended at sign-in")
		}
		if got, want := victim.whoAmI(t), ts.person(t, uma).Email; got != want {
			t.Errorf("victim: got signed in as %q; want %q", got, want)
		}
	})

	t.Run("session cookie attributes on http", func(t *testing.T) {
		c := ts.newClient(t)
		cb := c.signIn(t, uma)
		ck := cb.cookie("patchbay_session")
		if ck == nil {
			t.Fatalf("callback set no patchbay_session cookie; Set-Cookie: %q", cb.header.Values("Set-Cookie"))
		}
		wantSessionCookie(t, ck, false)
		if ck.MaxAge != int(testSessions.MaxAge.Seconds()) {
			t.Errorf("got Max-Age %d; want %d", ck.MaxAge, int(testSessions.MaxAge.Seconds()))
		}
		if flow := cb.cookie("patchbay_signin"); flow == nil || flow.MaxAge >= 0 {
			t.Errorf("flow cookie after callback: got %v; want it deleted", flow)
		}
	})

	t.Run("sign-out ends the session server-side", func(t *testing.T) {
		c := ts.signIn(t, uma)
		old := c.session
		r := c.formPost(t, "/auth/logout", nil)
		wantStatus(t, r, http.StatusSeeOther)
		if got := r.header.Get("Location"); got != "/signin" {
			t.Errorf("got Location %q; want /signin", got)
		}
		if ck := r.cookie(cookieName); ck == nil || ck.MaxAge >= 0 {
			t.Errorf("got Set-Cookie %v; want the session cookie deleted", ck)
		}
		if sessionExists(t, old) {
			t.Error("got the session still stored after sign-out; want it deleted")
		}
		replay := ts.newClient(t)
		replay.setCookie(cookieName, old)
		if got := replay.whoAmI(t); got != "" {
			t.Errorf("replayed cookie: got signed in as %q; want signed out", got)
		}
		if r := replay.get(t, "/connectors"); r.status != http.StatusSeeOther {
			t.Errorf("replayed cookie on a page: got %d; want 303 to sign-in", r.status)
		}
	})

	t.Run("htmx sign-out redirects with HX-Redirect", func(t *testing.T) {
		c := ts.signIn(t, uma)
		r := c.htmxPost(t, "/auth/logout", nil)
		wantStatus(t, r, http.StatusOK)
		if got := r.header.Get("HX-Redirect"); got != "/signin" {
			t.Errorf("got HX-Redirect %q; want /signin", got)
		}
		if sessionExists(t, c.session) {
			t.Error("got the session still stored; want it deleted")
		}
	})

	t.Run("disabling a user ends their live session", func(t *testing.T) {
		admin := ts.signIn(t, ada)
		victim := ts.signIn(t, sam)
		id := ts.user(t, sam).ID
		r := admin.htmxPost(t, concretePath(t, "/users/:id/disable", map[string]int64{"/users/": id}), nil)
		wantStatus(t, r, http.StatusOK)
		if sessionExists(t, victim.session) {
			t.Error("got the disabled user's session still stored; want it deleted")
		}
		if got := victim.whoAmI(t); got != "" {
			t.Errorf("disabled user: got signed in as %q; want signed out", got)
		}
		if r := victim.get(t, "/connectors"); r.status != http.StatusSeeOther {
			t.Errorf("disabled user on a page: got %d; want 303 to sign-in", r.status)
		}
		// Signing in again is refused while disabled.
		again := ts.newClient(t)
		cb := again.get(t, again.authorize(t, sam, ""))
		wantStatus(t, cb, http.StatusForbidden)
		if again.cookieValue(cookieName) != "" {
			t.Error("disabled user got a session cookie; want none")
		}
		r = admin.htmxPost(t, concretePath(t, "/users/:id/enable", map[string]int64{"/users/": id}), nil)
		wantStatus(t, r, http.StatusOK)
	})

	t.Run("https uses a __Host- cookie with Secure", func(t *testing.T) {
		base, _ := url.Parse("https://patchbay.example")
		hs := New(Deps{DB: ts.db, Log: ts.log, BaseURL: base, Sessions: testSessions, Auth: NewAuthenticator(ts.oidc), Connectors: ts.rt})
		if got := hs.sessionCookieName(); got != "__Host-patchbay_session" {
			t.Fatalf("got cookie name %q; want __Host-patchbay_session", got)
		}
		serve := func(req *http.Request) *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			hs.ServeHTTP(rec, req)
			return rec
		}
		user := ts.user(t, sam)
		token, err := ts.db.CreateSession(ctx, user.ID, testSessions)
		if err != nil {
			t.Fatal(err)
		}

		t.Run("the __Host- cookie authenticates", func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "https://patchbay.example/api/me", nil)
			req.AddCookie(&http.Cookie{Name: "__Host-patchbay_session", Value: token})
			rec := serve(req)
			if rec.Code != http.StatusOK {
				t.Fatalf("got %d; want 200 (%s)", rec.Code, rec.Body)
			}
			var me apiMe
			if err := json.Unmarshal(rec.Body.Bytes(), &me); err != nil || me.ID != user.ID {
				t.Errorf("got %+v (%v); want user %d", me, err, user.ID)
			}
			if got := rec.Header().Get("Strict-Transport-Security"); got == "" {
				t.Error("got no Strict-Transport-Security on https; want one")
			}
		})

		t.Run("the unprefixed cookie does not", func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "https://patchbay.example/api/me", nil)
			req.AddCookie(&http.Cookie{Name: "patchbay_session", Value: token})
			if rec := serve(req); rec.Code != http.StatusUnauthorized {
				t.Errorf("got %d; want 401", rec.Code)
			}
		})

		t.Run("sign-in sets __Host- cookies with Secure", func(t *testing.T) {
			rec := serve(httptest.NewRequest(http.MethodGet, "https://patchbay.example/auth/login", nil))
			if rec.Code != http.StatusFound {
				t.Fatalf("login: got %d; want 302 (%s)", rec.Code, rec.Body)
			}
			flow := recCookie(rec, "__Host-patchbay_signin")
			if flow == nil {
				t.Fatalf("login set no __Host-patchbay_signin; Set-Cookie: %q", rec.Header().Values("Set-Cookie"))
			}
			wantSessionCookie(t, flow, true)

			// The browser visits the provider and is sent back with a code.
			browser := ts.newClient(t)
			picker := browser.get(t, rec.Header().Get("Location"))
			wantStatus(t, picker, http.StatusOK)
			action, form := pickerForm(t, picker, sam)
			back := browser.post(t, action, form)
			wantStatus(t, back, http.StatusFound)
			cbURL, _ := url.Parse(back.location(t))

			req := httptest.NewRequest(http.MethodGet, "https://patchbay.example/auth/callback?"+cbURL.RawQuery, nil)
			req.AddCookie(&http.Cookie{Name: flow.Name, Value: flow.Value})
			rec = serve(req)
			if rec.Code != http.StatusSeeOther {
				t.Fatalf("callback: got %d; want 303 (%s)", rec.Code, rec.Body)
			}
			ck := recCookie(rec, "__Host-patchbay_session")
			if ck == nil {
				t.Fatalf("callback set no __Host-patchbay_session; Set-Cookie: %q", rec.Header().Values("Set-Cookie"))
			}
			wantSessionCookie(t, ck, true)
			if ck.Domain != "" {
				t.Errorf("got Domain %q on a __Host- cookie; want none", ck.Domain)
			}
			if recCookie(rec, "patchbay_session") != nil {
				t.Error("got an unprefixed session cookie on https; want only __Host-")
			}
		})

		t.Run("sign-out deletes the __Host- cookie", func(t *testing.T) {
			p, err := ts.db.Session(ctx, token, testSessions)
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest(http.MethodPost, "https://patchbay.example/auth/logout", strings.NewReader(""))
			req.Header.Set("Origin", "https://patchbay.example")
			req.Header.Set(csrfHeader, p.CSRFToken)
			req.AddCookie(&http.Cookie{Name: "__Host-patchbay_session", Value: token})
			rec := serve(req)
			if rec.Code != http.StatusSeeOther {
				t.Fatalf("got %d; want 303 (%s)", rec.Code, rec.Body)
			}
			ck := recCookie(rec, "__Host-patchbay_session")
			if ck == nil || ck.MaxAge >= 0 || !ck.Secure {
				t.Errorf("got Set-Cookie %v; want the __Host- cookie deleted with Secure", ck)
			}
			if sessionExists(t, token) {
				t.Error("got the session still stored; want it deleted")
			}
		})
	})
}

// wantSessionCookie checks the attributes every Patchbay cookie carries.
func wantSessionCookie(t *testing.T, ck *http.Cookie, secure bool) {
	t.Helper()
	if !ck.HttpOnly {
		t.Errorf("%s: got HttpOnly false; want true", ck.Name)
	}
	if ck.SameSite != http.SameSiteLaxMode {
		t.Errorf("%s: got SameSite %v; want Lax", ck.Name, ck.SameSite)
	}
	if ck.Path != "/" {
		t.Errorf("%s: got Path %q; want /", ck.Name, ck.Path)
	}
	if ck.Secure != secure {
		t.Errorf("%s: got Secure %v; want %v", ck.Name, ck.Secure, secure)
	}
	if ck.Value == "" {
		t.Errorf("%s: got an empty value; want the session token", ck.Name)
	}
}

func recCookie(rec *httptest.ResponseRecorder, name string) *http.Cookie {
	for _, c := range rec.Result().Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}
