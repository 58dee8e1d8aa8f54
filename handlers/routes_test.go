package handlers

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"patchbay"
)

// routeDiff compares what echo has registered with what s.handle recorded:
// extra routes reached echo without declaring access, missing ones were
// declared but never registered.
func routeDiff(s *Server) (extra, missing []string) {
	declared := map[string]bool{}
	for _, r := range s.Routes() {
		declared[r.Method+" "+r.Path] = true
	}
	registered := map[string]bool{}
	for _, r := range s.echoRoutes() {
		k := r.Method + " " + r.Path
		registered[k] = true
		if !declared[k] {
			extra = append(extra, k)
		}
	}
	for k := range declared {
		if !registered[k] {
			missing = append(missing, k)
		}
	}
	slices.Sort(extra)
	slices.Sort(missing)
	return extra, missing
}

func TestRouteWalk(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serverOpts{})

	t.Run("every route declares its access", func(t *testing.T) {
		routes := ts.srv.Routes()
		if len(routes) == 0 {
			t.Fatal("got no routes; want the server's routes")
		}
		for _, r := range routes {
			if !r.Access.Declared() {
				t.Errorf("%s %s: got access %s; want a declared access", r.Method, r.Path, r.Access)
			}
		}
	})

	t.Run("echo serves exactly the declared routes", func(t *testing.T) {
		extra, missing := routeDiff(ts.srv)
		if len(extra) > 0 {
			t.Errorf("registered with echo but not declared: got %v; want none", extra)
		}
		if len(missing) > 0 {
			t.Errorf("declared but not registered with echo: got %v; want none", missing)
		}
	})

	t.Run("a route added to echo directly is caught", func(t *testing.T) {
		base, _ := url.Parse("http://patchbay.test")
		s := New(Deps{BaseURL: base, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		s.echo.GET("/sneaky", func(c echo.Context) error { return c.String(http.StatusOK, "open") })
		extra, _ := routeDiff(s)
		if !slices.Equal(extra, []string{"GET /sneaky"}) {
			t.Errorf("got undeclared %v; want [GET /sneaky]", extra)
		}
	})

	t.Run("a route without an access rule is closed", func(t *testing.T) {
		c := echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/x", nil), httptest.NewRecorder())
		err := requireCap(Access{})(func(c echo.Context) error { return c.String(http.StatusOK, "open") })(c)
		if got := patchbay.ErrorCode(err); got != patchbay.EFORBIDDEN {
			t.Errorf("got error code %q; want %q", got, patchbay.EFORBIDDEN)
		}
	})

	t.Run("every POST route checks the CSRF token and the origin", func(t *testing.T) {
		admin := ts.signIn(t, ada)
		ts.signIn(t, uma)
		ctx := context.Background()
		umaID := ts.user(t, uma).ID
		_, tok, err := ts.db.CreateAPIToken(ctx, ts.user(t, ada).ID, "csrf probe")
		if err != nil {
			t.Fatal(err)
		}
		fx := ts.seedConnectorFixtures(t, umaID)
		ids := fx.ids()
		ids["/users/"], ids["/tokens/"] = umaID, tok.ID
		form := url.Values{"role": {patchbay.RoleSupport}, "name": {"csrfprobe"}, "capability": {string(patchbay.CapUsersManage)}}
		var checked int
		for _, r := range ts.srv.Routes() {
			if r.Method != http.MethodPost {
				continue
			}
			path := concretePath(t, r.Path, ids)
			t.Run(r.Method+" "+r.Path, func(t *testing.T) {
				for _, h := range []http.Header{hdr("Origin", "http://evil.example"), hdr("Sec-Fetch-Site", "cross-site"), hdr("Sec-Fetch-Site", "same-site")} {
					got := admin.post(t, path, withToken(form, admin.csrf), jsonReq, h)
					wantStatus(t, got, http.StatusForbidden)
					if e := got.apiError(t); !strings.Contains(e.Message, "Cross-site") {
						t.Errorf("with %v: got message %q; want the cross-site refusal", h, e.Message)
					}
				}
				if r.OwnCSRF {
					return // the development provider's forms carry their own token
				}
				for name, f := range map[string]url.Values{"no token": form, "wrong token": withToken(form, "x"+admin.csrf)} {
					got := admin.post(t, path, f, jsonReq)
					wantStatus(t, got, http.StatusForbidden)
					if e := got.apiError(t); e.Code != "forbidden" || !strings.Contains(e.Message, "expired") {
						t.Errorf("%s: got %+v; want code forbidden with the expired-form message", name, e)
					}
				}
				checked++
			})
		}
		if checked < 6 {
			t.Errorf("got %d token-checked POST routes; want at least 6", checked)
		}
		// Nothing any of those requests asked for happened.
		if admin.whoAmI(t) == "" {
			t.Error("admin was signed out by a refused POST /auth/logout")
		}
		u, err := ts.db.UserByID(ctx, umaID)
		if err != nil {
			t.Fatal(err)
		}
		if u.Role != patchbay.RoleUser || u.Disabled {
			t.Errorf("uma: got role %q disabled=%v; want role user, enabled", u.Role, u.Disabled)
		}
		if _, err := ts.db.Role(ctx, "csrfprobe"); patchbay.ErrorCode(err) != patchbay.ENOTFOUND {
			t.Errorf("role csrfprobe: got err %v; want not found", err)
		}
		if toks, _ := ts.db.ListAPITokens(ctx, ts.user(t, ada).ID); len(toks) != 1 {
			t.Errorf("admin tokens: got %d; want 1 (none created, none revoked)", len(toks))
		}
		if gs, _ := ts.db.GlobalServers(ctx); len(gs) != 1 || gs[0].Enabled {
			t.Errorf("shared connectors: got %+v; want only the fixture, still disabled", gs)
		}
		if grants, _ := ts.db.GlobalGrants(ctx, fx.globalID); len(grants) != 1 {
			t.Errorf("fixture grants: got %d; want 1 (none added, none revoked)", len(grants))
		}
		if rows, _ := ts.db.UserServers(ctx, ts.user(t, ada).ID); len(rows) != 1 || rows[0].Name != "7" {
			t.Errorf("admin activations: got %+v; want only the fixture's (none activated, none deactivated)", rows)
		}
	})
}

// concretePath fills a route's parameters: :id with the id chosen by
// path prefix, any other :param with ids[":param"].
func concretePath(t *testing.T, path string, ids map[string]int64) string {
	t.Helper()
	segs := strings.Split(path, "/")
	for i, seg := range segs {
		if !strings.HasPrefix(seg, ":") {
			continue
		}
		if seg == ":id" {
			for prefix, id := range ids {
				if strings.HasPrefix(prefix, "/") && strings.HasPrefix(path, prefix) {
					segs[i] = fmt.Sprint(id)
				}
			}
		} else if id, ok := ids[seg]; ok {
			segs[i] = fmt.Sprint(id)
		}
		if strings.HasPrefix(segs[i], ":") {
			t.Fatalf("route %s has a parameter %s this test cannot fill; add it", path, seg)
		}
	}
	return strings.Join(segs, "/")
}

func withToken(form url.Values, token string) url.Values {
	f := url.Values{}
	for k, v := range form {
		f[k] = v
	}
	f.Set(csrfField, token)
	return f
}
