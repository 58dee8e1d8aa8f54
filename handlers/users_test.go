package handlers

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"patchbay"
)

func TestUsersPageActions(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serverOpts{})
	ctx := context.Background()
	admin := ts.signIn(t, ada)
	ts.signIn(t, uma)
	adaID, umaID := ts.user(t, ada).ID, ts.user(t, uma).ID
	userPath := func(id int64, action string) string {
		return concretePath(t, "/users/:id/"+action, map[string]int64{"/users/": id})
	}

	t.Run("changing a role with htmx returns the users table showing it", func(t *testing.T) {
		r := admin.htmxPost(t, userPath(umaID, "role"), url.Values{"role": {patchbay.RoleSupport}})
		wantStatus(t, r, http.StatusOK)
		if isFullPage(r.body) {
			t.Fatalf("got a full page; want the users-table partial")
		}
		doc := r.doc(t)
		if doc.Find(`section#users-table`).Length() != 1 || doc.Find(`#roles-section`).Length() != 0 {
			t.Errorf("got %.300q; want just the users-table section", r.body)
		}
		row := doc.Find(`[data-testid="user-row"][data-user-id="` + itoa64(umaID) + `"]`)
		if got, _ := row.Find(`[data-testid="user-role-select"] option[selected]`).Attr("value"); got != patchbay.RoleSupport {
			t.Errorf("got uma's selected role %q; want %q", got, patchbay.RoleSupport)
		}
		if got := strings.TrimSpace(doc.Find(`[data-testid="flash"]`).Text()); !strings.Contains(got, "support") {
			t.Errorf("got flash %q; want it to name the new role", got)
		}
		if u, _ := ts.db.UserByID(ctx, umaID); u.Role != patchbay.RoleSupport {
			t.Errorf("stored role: got %q; want %q", u.Role, patchbay.RoleSupport)
		}
	})

	t.Run("changing a role to one that does not exist is refused", func(t *testing.T) {
		r := admin.htmxPost(t, userPath(umaID, "role"), url.Values{"role": {"no-such-role"}})
		if r.status < 400 || r.status >= 500 {
			t.Errorf("got %d; want a 4xx", r.status)
		}
		if u, _ := ts.db.UserByID(ctx, umaID); u.Role != patchbay.RoleSupport {
			t.Errorf("stored role: got %q; want %q (unchanged)", u.Role, patchbay.RoleSupport)
		}
	})

	t.Run("creating a role with htmx returns the roles section showing it", func(t *testing.T) {
		r := admin.htmxPost(t, "/roles", url.Values{"name": {"auditors"}, "capability": {string(patchbay.CapInspectLogins)}})
		wantStatus(t, r, http.StatusOK)
		if isFullPage(r.body) {
			t.Fatalf("got a full page; want the roles-section partial")
		}
		doc := r.doc(t)
		if doc.Find(`section#roles-section`).Length() != 1 || doc.Find(`#users-table`).Length() != 0 {
			t.Errorf("got %.300q; want just the roles-section", r.body)
		}
		row := doc.Find(`[data-testid="role-row"][data-role="auditors"]`)
		if row.Length() != 1 {
			t.Fatalf("got no row for the new role in %.500q", r.body)
		}
		if !strings.Contains(row.Text(), string(patchbay.CapInspectLogins)) {
			t.Errorf("got role row %q; want it to list %s", strings.Join(strings.Fields(row.Text()), " "), patchbay.CapInspectLogins)
		}
		if got := strings.TrimSpace(doc.Find(`[data-testid="flash"]`).Text()); got != "Role auditors created." {
			t.Errorf("got flash %q; want %q", got, "Role auditors created.")
		}
	})

	t.Run("creating a role without JavaScript redirects to the users page", func(t *testing.T) {
		r := admin.formPost(t, "/roles", url.Values{"name": {"plain-form"}})
		wantStatus(t, r, http.StatusSeeOther)
		if got := r.header.Get("Location"); got != "/users" {
			t.Errorf("got Location %q; want /users", got)
		}
		if _, err := ts.db.Role(ctx, "plain-form"); err != nil {
			t.Errorf("role plain-form: got %v; want it created", err)
		}
		page := admin.follow(t, r)
		wantStatus(t, page, http.StatusOK)
		if page.doc(t).Find(`[data-testid="role-row"][data-role="plain-form"]`).Length() != 1 {
			t.Error("got the users page without the new role; want it listed")
		}
	})

	t.Run("an admin cannot lock themselves out", func(t *testing.T) {
		for _, tc := range []struct {
			name, action string
			form         url.Values
			message      string
		}{
			{"disable", "disable", nil, "You cannot disable yourself."},
			{"demote", "role", url.Values{"role": {patchbay.RoleUser}}, "You cannot change your own role."},
		} {
			t.Run(tc.name+" with htmx", func(t *testing.T) {
				r := admin.htmxPost(t, userPath(adaID, tc.action), tc.form)
				wantErrorFragment(t, r, http.StatusBadRequest)
				if got := r.doc(t).Find(`[data-testid="error-message"]`).Text(); !strings.Contains(got, tc.message) {
					t.Errorf("got message %q; want %q", got, tc.message)
				}
			})
			t.Run(tc.name+" with a plain form", func(t *testing.T) {
				r := admin.formPost(t, userPath(adaID, tc.action), tc.form)
				wantErrorPage(t, r, http.StatusBadRequest)
				if got := r.doc(t).Find(`[data-testid="error-message"]`).Text(); !strings.Contains(got, tc.message) {
					t.Errorf("got message %q; want %q", got, tc.message)
				}
			})
		}
		u, err := ts.db.UserByID(ctx, adaID)
		if err != nil {
			t.Fatal(err)
		}
		if u.Role != patchbay.RoleAdmin || u.Disabled {
			t.Errorf("admin: got role %q disabled=%v; want admin, enabled", u.Role, u.Disabled)
		}
		if admin.whoAmI(t) == "" {
			t.Error("admin got signed out; want still signed in")
		}
	})

	t.Run("disable and enable with htmx update the table", func(t *testing.T) {
		status := func(r response) string {
			row := r.doc(t).Find(`[data-testid="user-row"][data-user-id="` + itoa64(umaID) + `"]`)
			return strings.TrimSpace(row.Find(`[data-testid="user-status"]`).Text())
		}
		r := admin.htmxPost(t, userPath(umaID, "disable"), nil)
		wantStatus(t, r, http.StatusOK)
		if got := status(r); got != "Disabled" {
			t.Errorf("after disable: got status %q; want Disabled", got)
		}
		r = admin.htmxPost(t, userPath(umaID, "enable"), nil)
		wantStatus(t, r, http.StatusOK)
		if got := status(r); got != "Active" {
			t.Errorf("after enable: got status %q; want Active", got)
		}
	})

	t.Run("actions on a user that does not exist are not found", func(t *testing.T) {
		for _, action := range []string{"role", "disable", "enable"} {
			r := admin.htmxPost(t, userPath(99999, action), url.Values{"role": {patchbay.RoleUser}})
			wantErrorFragment(t, r, http.StatusNotFound)
		}
		wantStatus(t, admin.formPost(t, "/users/abc/disable", nil), http.StatusNotFound)
	})
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
