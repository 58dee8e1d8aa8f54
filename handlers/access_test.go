package handlers

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"patchbay"
	"patchbay/db"
)

// mayOpen says which development roles may open each signed-in GET route.
// It is written out by hand, as the specification; a new route fails the
// test until it is added here.
var mayOpen = map[string]map[string]bool{
	"/":            {ada: true, uma: true, sam: true},
	"/connectors":  {ada: true, uma: true, sam: true},
	"/marketplace": {ada: true, uma: true, sam: true},
	"/support":     {ada: true, sam: true},
	"/users":       {ada: true},
	"/tokens":      {ada: true, uma: true, sam: true},
	"/api/me":      {ada: true, uma: true, sam: true},
	"/api/users":   {ada: true},

	"/connectors/list": {ada: true, uma: true, sam: true},
	// Each person's own connector named 7 (see seedConnectorFixtures).
	"/connectors/:name/output": {ada: true, uma: true, sam: true},
	// The fixture run is uma's: hers, and support and admins may read it
	// (another person gets 404; see TestInstallRunsArePrivate).
	"/installs/:id":                  {ada: true, uma: true, sam: true},
	"/admin/connectors":              {ada: true},
	"/admin/connectors/list":         {ada: true},
	"/admin/connectors/new":          {ada: true},
	"/admin/connectors/:id/settings": {ada: true},
	"/admin/connectors/:id/output":   {ada: true},
}

// requestKind is how a browser or script asks for a route.
type requestKind struct {
	name   string
	header http.Header
}

var requestKinds = []requestKind{
	{"page", nil},
	{"htmx", htmxReq},
	{"json", jsonReq},
}

// signedInGETs lists every non-public GET route.
func signedInGETs(s *Server) []string {
	var paths []string
	for _, r := range s.Routes() {
		if r.Method == http.MethodGet && r.Access.kind != accessPublic {
			paths = append(paths, r.Path)
		}
	}
	return paths
}

func TestAccessMatrix(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serverOpts{})
	clients := map[string]*client{ada: ts.signIn(t, ada), uma: ts.signIn(t, uma), sam: ts.signIn(t, sam)}
	for subject, wantRole := range map[string]string{ada: patchbay.RoleAdmin, uma: patchbay.RoleUser, sam: patchbay.RoleSupport} {
		if got := ts.user(t, subject).Role; got != wantRole {
			t.Fatalf("%s signed in with role %q; want %q", subject, got, wantRole)
		}
	}

	fx := ts.seedConnectorFixtures(t, ts.user(t, uma).ID)

	for _, route := range signedInGETs(ts.srv) {
		allowed, ok := mayOpen[route]
		if !ok {
			t.Errorf("GET %s: no expectation in mayOpen; add one", route)
			continue
		}
		path := fx.concreteGET(t, route)
		isAPI := strings.HasPrefix(path, "/api/")
		for _, subject := range []string{ada, uma, sam} {
			for _, kind := range requestKinds {
				t.Run(fmt.Sprintf("%s %s as %s", kind.name, path, subject), func(t *testing.T) {
					r := clients[subject].get(t, path, kind.header)
					switch {
					case allowed[subject] && path == "/":
						wantStatus(t, r, http.StatusSeeOther)
						if got := r.header.Get("Location"); got != "/connectors" {
							t.Errorf("got Location %q; want /connectors", got)
						}
					case allowed[subject]:
						wantStatus(t, r, http.StatusOK)
					case isAPI || kind.name == "json":
						wantForbiddenJSON(t, r)
					case kind.name == "htmx":
						wantErrorFragment(t, r, http.StatusForbidden)
					default:
						wantErrorPage(t, r, http.StatusForbidden)
					}
				})
			}
		}
	}

	t.Run("POST routes need their capability", func(t *testing.T) {
		ctx := context.Background()
		before := snapshot(t, ts.db)
		adaID, samID := ts.user(t, ada).ID, ts.user(t, sam).ID
		form := url.Values{"role": {patchbay.RoleAdmin}, "name": {"sneaky"}, "capability": {string(patchbay.CapUsersManage)}}
		for _, subject := range []string{uma, sam} {
			role, err := ts.db.Role(ctx, ts.user(t, subject).Role)
			if err != nil {
				t.Fatal(err)
			}
			c := clients[subject]
			for _, rt := range ts.srv.Routes() {
				if rt.Method != http.MethodPost || rt.Access.kind != accessCapability || rt.Access.grantedTo(role) {
					continue
				}
				// Aim at someone else, so only the capability can stop it.
				target := adaID
				if subject == uma {
					target = samID
				}
				ids := fx.ids()
				ids["/users/"] = target
				path := concretePath(t, rt.Path, ids)
				t.Run(subject+" "+path, func(t *testing.T) {
					wantErrorPage(t, c.formPost(t, path, form), http.StatusForbidden)
					wantErrorFragment(t, c.htmxPost(t, path, form), http.StatusForbidden)
					wantForbiddenJSON(t, c.formPost(t, path, form, jsonReq))
				})
			}
		}
		if after := snapshot(t, ts.db); after != before {
			t.Errorf("state changed by refused requests:\ngot  %s\nwant %s", after, before)
		}
	})

	t.Run("signed out", func(t *testing.T) {
		anon := ts.newClient(t)
		for _, path := range fx.concreteGETs(t, ts.srv) {
			isAPI := strings.HasPrefix(path, "/api/")
			wantSignIn := "/signin?next=" + url.QueryEscape(path)
			if path == "/" {
				wantSignIn = "/signin"
			}
			t.Run("page "+path, func(t *testing.T) {
				r := anon.get(t, path)
				if isAPI {
					wantUnauthorizedJSON(t, r)
					return
				}
				wantStatus(t, r, http.StatusSeeOther)
				if got := r.header.Get("Location"); got != wantSignIn {
					t.Errorf("got Location %q; want %q", got, wantSignIn)
				}
			})
			t.Run("htmx "+path, func(t *testing.T) {
				r := anon.get(t, path, htmxReq)
				if isAPI {
					wantUnauthorizedJSON(t, r)
					return
				}
				wantErrorFragment(t, r, http.StatusUnauthorized)
				if got := r.header.Get("HX-Redirect"); got != wantSignIn {
					t.Errorf("got HX-Redirect %q; want %q", got, wantSignIn)
				}
			})
			t.Run("json "+path, func(t *testing.T) {
				wantUnauthorizedJSON(t, anon.get(t, path, jsonReq))
			})
		}
		t.Run("htmx returns to the page it was sent from", func(t *testing.T) {
			r := anon.get(t, "/users", htmxReq, hdr("HX-Current-URL", ts.URL+"/tokens?x=1"))
			wantStatus(t, r, http.StatusUnauthorized)
			if got, want := r.header.Get("HX-Redirect"), "/signin?next="+url.QueryEscape("/tokens?x=1"); got != want {
				t.Errorf("got HX-Redirect %q; want %q", got, want)
			}
		})
		t.Run("sign-in page links to a same-site next", func(t *testing.T) {
			r := anon.get(t, "/signin?next="+url.QueryEscape("/tokens"))
			wantStatus(t, r, http.StatusOK)
			href, _ := r.doc(t).Find(`[data-testid="sign-in-link"]`).Attr("href")
			if want := "/auth/login?next=" + url.QueryEscape("/tokens"); href != want {
				t.Errorf("got sign-in link %q; want %q", href, want)
			}
		})
	})
}

// wantErrorPage checks a full HTML error page with the given status.
func wantErrorPage(t *testing.T, r response, status int) {
	t.Helper()
	wantStatus(t, r, status)
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("got Content-Type %q; want text/html", ct)
	}
	if !isFullPage(r.body) {
		t.Errorf("got a fragment; want a full page: %.200q", r.body)
	}
	doc := r.doc(t)
	if got, want := strings.TrimSpace(doc.Find(`[data-testid="error-status"]`).Text()), fmt.Sprintf("Error %d", status); got != want {
		t.Errorf("got error status %q; want %q", got, want)
	}
	if r.header.Get("HX-Retarget") != "" {
		t.Errorf("got HX-Retarget %q on a page; want none", r.header.Get("HX-Retarget"))
	}
}

// wantErrorFragment checks an HTMX error fragment aimed at the alert region.
func wantErrorFragment(t *testing.T, r response, status int) {
	t.Helper()
	wantStatus(t, r, status)
	if got := r.header.Get("HX-Retarget"); got != "#htmx-alerts" {
		t.Errorf("got HX-Retarget %q; want #htmx-alerts", got)
	}
	if got := r.header.Get("HX-Reswap"); got != "innerHTML" {
		t.Errorf("got HX-Reswap %q; want innerHTML", got)
	}
	if isFullPage(r.body) {
		t.Errorf("got a full page; want a fragment: %.200q", r.body)
	}
	if r.doc(t).Find(`[data-testid="error-fragment"]`).Length() != 1 {
		t.Errorf("got no error-fragment element in %.300q", r.body)
	}
}

func wantForbiddenJSON(t *testing.T, r response) {
	t.Helper()
	wantStatus(t, r, http.StatusForbidden)
	if got := r.apiError(t).Code; got != "forbidden" {
		t.Errorf("got error code %q; want forbidden", got)
	}
}

func wantUnauthorizedJSON(t *testing.T, r response) {
	t.Helper()
	wantStatus(t, r, http.StatusUnauthorized)
	if got := r.apiError(t).Code; got != "unauthorized" {
		t.Errorf("got error code %q; want unauthorized", got)
	}
}

// snapshot describes every user's role and status and every role, so a
// test can show that refused requests changed nothing.
func snapshot(t *testing.T, d *db.DB) string {
	t.Helper()
	ctx := context.Background()
	users, err := d.ListUsers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	roles, err := d.ListRoles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, u := range users {
		fmt.Fprintf(&b, "user %d %s role=%s disabled=%v; ", u.ID, u.Email, u.Role, u.Disabled)
	}
	for _, r := range roles {
		fmt.Fprintf(&b, "role %s %v; ", r.Name, r.Capabilities)
	}
	globals, err := d.GlobalServers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range globals {
		grants, err := d.GlobalGrants(ctx, g.ID)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "shared %s enabled=%v config=%v secrets=%v grants=%d; ", g.Name, g.Enabled, g.Config, g.HasSecrets, len(grants))
	}
	for _, u := range users {
		rows, err := d.UserServers(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			fmt.Fprintf(&b, "activation %d %s; ", u.ID, r.Name)
		}
	}
	return b.String()
}

// AnyCap opens a route to a role holding any one of its capabilities and
// to no other; the marketplace routes use it so a role that may activate
// only remote connectors still reaches them.
func TestAnyCapNeedsOneOfItsCapabilities(t *testing.T) {
	a := AnyCap(patchbay.CapRegisterLocalFromCatalog, patchbay.CapRegisterRemote)
	for _, c := range []struct {
		caps []patchbay.Capability
		want bool
	}{
		{[]patchbay.Capability{patchbay.CapRegisterRemote}, true},
		{[]patchbay.Capability{patchbay.CapRegisterLocalFromCatalog}, true},
		{[]patchbay.Capability{patchbay.CapAPITokens, patchbay.CapInspectLogins}, false},
		{nil, false},
	} {
		if got := a.grantedTo(patchbay.Role{Name: "custom", Capabilities: c.caps}); got != c.want {
			t.Errorf("role with %v: got %v; want %v", c.caps, got, c.want)
		}
	}
	if !a.grantedTo(patchbay.Role{Name: patchbay.RoleAdmin}) {
		t.Error("admin refused")
	}
	if got := a.String(); got != "cap:mcp.register_local_from_catalog|mcp.register_remote" {
		t.Errorf("String: got %q", got)
	}
}
