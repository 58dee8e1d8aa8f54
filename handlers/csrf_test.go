package handlers

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"patchbay"
)

func TestCSRF(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serverOpts{})
	ctx := context.Background()
	admin := ts.signIn(t, ada)
	ts.signIn(t, uma)
	umaID := ts.user(t, uma).ID
	rolePath := concretePath(t, "/users/:id/role", map[string]int64{"/users/": umaID})
	umaRole := func(t *testing.T) string {
		t.Helper()
		u, err := ts.db.UserByID(ctx, umaID)
		if err != nil {
			t.Fatal(err)
		}
		return u.Role
	}
	toSupport := url.Values{"role": {patchbay.RoleSupport}}

	refused := []struct {
		name string
		send func(t *testing.T) response
	}{
		{"cross-site Sec-Fetch-Site with a valid token", func(t *testing.T) response {
			return admin.htmxPost(t, rolePath, toSupport, hdr("Sec-Fetch-Site", "cross-site"))
		}},
		{"same-site Sec-Fetch-Site with a valid token", func(t *testing.T) response {
			return admin.formPost(t, rolePath, toSupport, hdr("Sec-Fetch-Site", "same-site"))
		}},
		{"foreign Origin with a valid token", func(t *testing.T) response {
			return admin.formPost(t, rolePath, toSupport, hdr("Origin", "http://evil.example"))
		}},
		{"null Origin with a valid token", func(t *testing.T) response {
			return admin.formPost(t, rolePath, toSupport, hdr("Origin", "null"))
		}},
		{"same-origin without a token", func(t *testing.T) response {
			return admin.post(t, rolePath, toSupport, hdr("Origin", ts.URL))
		}},
		{"same-origin htmx without a token", func(t *testing.T) response {
			return admin.post(t, rolePath, toSupport, htmxReq, hdr("Sec-Fetch-Site", "same-origin"))
		}},
		{"another session's token", func(t *testing.T) response {
			other := ts.signIn(t, sam)
			return admin.post(t, rolePath, withToken(toSupport, other.csrf))
		}},
	}
	for _, tc := range refused {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			r := tc.send(t)
			wantStatus(t, r, http.StatusForbidden)
			if got := umaRole(t); got != patchbay.RoleUser {
				t.Errorf("uma's role: got %q; want %q (unchanged)", got, patchbay.RoleUser)
			}
		})
	}

	t.Run("token in the htmx header is accepted", func(t *testing.T) {
		r := admin.htmxPost(t, rolePath, url.Values{"role": {patchbay.RoleSupport}}, hdr("Sec-Fetch-Site", "same-origin"))
		wantStatus(t, r, http.StatusOK)
		if got := umaRole(t); got != patchbay.RoleSupport {
			t.Errorf("uma's role: got %q; want %q", got, patchbay.RoleSupport)
		}
	})

	t.Run("token in the form field is accepted", func(t *testing.T) {
		r := admin.formPost(t, rolePath, url.Values{"role": {patchbay.RoleUser}}, hdr("Origin", ts.URL))
		wantStatus(t, r, http.StatusSeeOther)
		if got := umaRole(t); got != patchbay.RoleUser {
			t.Errorf("uma's role: got %q; want %q", got, patchbay.RoleUser)
		}
	})

	t.Run("bearer token needs no CSRF token but must be same-origin", func(t *testing.T) {
		secret, _, err := ts.db.CreateAPIToken(ctx, ts.user(t, ada).ID, "script")
		if err != nil {
			t.Fatal(err)
		}
		script := ts.newClient(t) // no cookies
		bearer := hdr("Authorization", "Bearer "+secret)

		r := script.post(t, "/roles", url.Values{"name": {"from-script"}}, bearer)
		wantStatus(t, r, http.StatusSeeOther)
		if _, err := ts.db.Role(ctx, "from-script"); err != nil {
			t.Errorf("role from-script: got %v; want it created", err)
		}

		for _, h := range []http.Header{hdr("Origin", "http://evil.example"), hdr("Sec-Fetch-Site", "cross-site")} {
			r := script.post(t, "/roles", url.Values{"name": {"cross-site"}}, bearer, h)
			wantStatus(t, r, http.StatusForbidden)
		}
		if _, err := ts.db.Role(ctx, "cross-site"); patchbay.ErrorCode(err) != patchbay.ENOTFOUND {
			t.Errorf("role cross-site: got err %v; want not found", err)
		}
	})

	t.Run("signed-out POST is not a CSRF token check", func(t *testing.T) {
		// Nothing is at stake without a session: sign-out just redirects.
		r := ts.newClient(t).post(t, "/auth/logout", nil)
		wantStatus(t, r, http.StatusSeeOther)
	})
}
