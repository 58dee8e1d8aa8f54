package db_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"patchbay"
	"patchbay/db"
)

func TestGrantGlobal(t *testing.T) {
	ctx := context.Background()
	f := newConnectorFixture(t)
	d := f.d
	g := f.createGlobal(t, "shared", nil)

	everyone, err := d.GrantGlobal(ctx, f.admin.ID, g.ID, db.GranteeEveryone, "", 0)
	if err != nil {
		t.Fatalf("GrantGlobal(everyone): %v", err)
	}
	wantAudit(t, d, "global.grant", "global:shared", "everyone", f.admin.ID)
	role, err := d.GrantGlobal(ctx, f.admin.ID, g.ID, db.GranteeRole, patchbay.RoleSupport, 0)
	if err != nil {
		t.Fatalf("GrantGlobal(role): %v", err)
	}
	wantAudit(t, d, "global.grant", "global:shared", "role=support", f.admin.ID)
	user, err := d.GrantGlobal(ctx, f.admin.ID, g.ID, db.GranteeUser, "", f.uma.ID)
	if err != nil {
		t.Fatalf("GrantGlobal(user): %v", err)
	}
	wantAudit(t, d, "global.grant", "global:shared", fmt.Sprintf("user=%d", f.uma.ID), f.admin.ID)

	want := []db.GlobalGrant{
		{ID: everyone.ID, GlobalID: g.ID, Grantee: db.GranteeEveryone, CreatedAt: f.clock.Now()},
		{ID: role.ID, GlobalID: g.ID, Grantee: db.GranteeRole, Role: patchbay.RoleSupport, CreatedAt: f.clock.Now()},
		{ID: user.ID, GlobalID: g.ID, Grantee: db.GranteeUser, UserID: f.uma.ID, UserEmail: "uma@example.test", CreatedAt: f.clock.Now()},
	}
	for i, got := range []db.GlobalGrant{everyone, role, user} {
		if !sameGrant(got, want[i]) {
			t.Errorf("GrantGlobal result %d: got %+v; want %+v", i, got, want[i])
		}
	}
	list, err := d.GlobalGrants(ctx, g.ID)
	if err != nil || len(list) != len(want) {
		t.Fatalf("GlobalGrants: got %+v, %v; want %d grants", list, err, len(want))
	}
	for i := range list {
		if !sameGrant(list[i], want[i]) {
			t.Errorf("GlobalGrants[%d]: got %+v; want %+v", i, list[i], want[i])
		}
	}

	t.Run("granting again returns the existing grant", func(t *testing.T) {
		before := auditCount(t, d)
		agains := []struct {
			grantee, role string
			userID        int64
			want          db.GlobalGrant
		}{
			{db.GranteeEveryone, "", 0, want[0]},
			{db.GranteeRole, patchbay.RoleSupport, 0, want[1]},
			{db.GranteeUser, "", f.uma.ID, want[2]},
			// Fields that do not match the grantee are ignored.
			{db.GranteeEveryone, "wizard", f.vic.ID, want[0]},
			{db.GranteeRole, patchbay.RoleSupport, f.vic.ID, want[1]},
		}
		for _, a := range agains {
			got, err := d.GrantGlobal(ctx, f.admin.ID, g.ID, a.grantee, a.role, a.userID)
			if err != nil || !sameGrant(got, a.want) {
				t.Errorf("GrantGlobal(%s, %q, %d) again: got %+v, %v; want %+v", a.grantee, a.role, a.userID, got, err, a.want)
			}
		}
		if n := countRows(t, d, "mcp_global_access", ""); n != 3 {
			t.Errorf("grants: got %d; want 3", n)
		}
		if got := auditCount(t, d); got != before {
			t.Errorf("audit rows: got %d; want %d (nothing new)", got, before)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		tests := []struct {
			name          string
			globalID      int64
			grantee, role string
			userID        int64
			code, message string
		}{
			{"unknown grantee", g.ID, "team", "", 0, patchbay.EINVALID, `A connector is granted to everyone, a role or a user, not "team".`},
			{"unknown role", g.ID, db.GranteeRole, "wizard", 0, patchbay.EINVALID, `No role named "wizard".`},
			{"no role", g.ID, db.GranteeRole, "", 0, patchbay.EINVALID, "Choose a role to grant the connector to."},
			{"unknown user", g.ID, db.GranteeUser, "", 9999, patchbay.EINVALID, "No such user."},
			{"no user", g.ID, db.GranteeUser, "", 0, patchbay.EINVALID, "Choose a user to grant the connector to."},
			{"unknown global", 9999, db.GranteeEveryone, "", 0, patchbay.ENOTFOUND, "No such global connector."},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				before := auditCount(t, d)
				_, err := d.GrantGlobal(ctx, f.admin.ID, tt.globalID, tt.grantee, tt.role, tt.userID)
				wantError(t, "GrantGlobal", err, tt.code, tt.message)
				if n := countRows(t, d, "mcp_global_access", ""); n != 3 {
					t.Errorf("grants: got %d; want 3", n)
				}
				if got := auditCount(t, d); got != before {
					t.Errorf("audit rows: got %d; want %d", got, before)
				}
			})
		}
	})
}

// sameGrant compares grants, their times with Equal.
func sameGrant(a, b db.GlobalGrant) bool {
	ok := a.CreatedAt.Equal(b.CreatedAt)
	a.CreatedAt = b.CreatedAt
	return ok && a == b
}

func TestRevokeGlobalGrant(t *testing.T) {
	ctx := context.Background()
	f := newConnectorFixture(t)
	d := f.d
	g := f.createGlobal(t, "first", nil)
	h := f.createGlobal(t, "second", nil)
	grant, err := d.GrantGlobal(ctx, f.admin.ID, g.ID, db.GranteeRole, patchbay.RoleUser, 0)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("a grant of another connector is not found", func(t *testing.T) {
		before := auditCount(t, d)
		err := d.RevokeGlobalGrant(ctx, f.admin.ID, h.ID, grant.ID)
		wantError(t, "RevokeGlobalGrant(other global)", err, patchbay.ENOTFOUND, "No such grant.")
		if n := countRows(t, d, "mcp_global_access", ""); n != 1 {
			t.Errorf("grants: got %d; want 1 (kept)", n)
		}
		if got := auditCount(t, d); got != before {
			t.Errorf("audit rows: got %d; want %d", got, before)
		}
	})

	t.Run("revoke", func(t *testing.T) {
		if err := d.RevokeGlobalGrant(ctx, f.admin.ID, g.ID, grant.ID); err != nil {
			t.Fatalf("RevokeGlobalGrant: %v", err)
		}
		wantAudit(t, d, "global.revoke", "global:first", "role=user", f.admin.ID)
		list, err := d.GlobalGrants(ctx, g.ID)
		if err != nil || len(list) != 0 {
			t.Errorf("GlobalGrants after revoke: got %v, %v; want none", list, err)
		}
		err = d.RevokeGlobalGrant(ctx, f.admin.ID, g.ID, grant.ID)
		wantCode(t, "RevokeGlobalGrant again", err, patchbay.ENOTFOUND)
	})
}

func TestGrantedGlobalNames(t *testing.T) {
	ctx := context.Background()
	f := newConnectorFixture(t)
	d := f.d
	grant := func(name, grantee, role string, userID int64) {
		t.Helper()
		g, err := d.GlobalServerByName(ctx, name)
		if err != nil {
			g = f.createGlobal(t, name, nil)
		}
		if _, err := d.GrantGlobal(ctx, f.admin.ID, g.ID, grantee, role, userID); err != nil {
			t.Fatalf("GrantGlobal(%s): %v", name, err)
		}
	}
	grant("all", db.GranteeEveryone, "", 0)
	grant("all", db.GranteeUser, "", f.uma.ID) // also granted directly: listed once
	grant("all", db.GranteeRole, patchbay.RoleUser, 0)
	grant("support-only", db.GranteeRole, patchbay.RoleSupport, 0)
	grant("for-uma", db.GranteeUser, "", f.uma.ID)
	grant("for-vic", db.GranteeUser, "", f.vic.ID)
	grant("admins", db.GranteeRole, patchbay.RoleAdmin, 0)
	grant("off", db.GranteeEveryone, "", 0)
	grant("off-for-uma", db.GranteeUser, "", f.uma.ID)
	f.createGlobal(t, "ungranted", nil)
	for _, name := range []string{"off", "off-for-uma"} {
		g, err := d.GlobalServerByName(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.SetGlobalEnabled(ctx, f.admin.ID, g.ID, false); err != nil {
			t.Fatal(err)
		}
	}

	tests := []struct {
		name   string
		userID int64
		role   string
		want   []string
	}{
		{"uma as user", f.uma.ID, patchbay.RoleUser, []string{"all", "for-uma"}},
		{"uma as support", f.uma.ID, patchbay.RoleSupport, []string{"all", "for-uma", "support-only"}},
		{"vic as user", f.vic.ID, patchbay.RoleUser, []string{"all", "for-vic"}},
		{"admin", f.admin.ID, patchbay.RoleAdmin, []string{"admins", "all"}},
		{"someone with a custom role", 9999, "auditors", []string{"all"}},
		{"nobody", 0, "", []string{"all"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := d.GrantedGlobalNames(ctx, tt.userID, tt.role)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("GrantedGlobalNames(%d, %q): got %v, %v; want %v", tt.userID, tt.role, got, err, tt.want)
			}
		})
	}

	t.Run("re-enabling restores a grant", func(t *testing.T) {
		g, err := d.GlobalServerByName(ctx, "off-for-uma")
		if err != nil {
			t.Fatal(err)
		}
		if err := d.SetGlobalEnabled(ctx, f.admin.ID, g.ID, true); err != nil {
			t.Fatal(err)
		}
		got, err := d.GrantedGlobalNames(ctx, f.uma.ID, patchbay.RoleUser)
		if want := []string{"all", "for-uma", "off-for-uma"}; err != nil || !slices.Equal(got, want) {
			t.Errorf("GrantedGlobalNames: got %v, %v; want %v", got, err, want)
		}
	})

	t.Run("nothing granted is an empty list", func(t *testing.T) {
		e := openTestDB(t)
		got, err := e.GrantedGlobalNames(ctx, 1, patchbay.RoleUser)
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("GrantedGlobalNames on an empty store: got %#v, %v; want an empty list", got, err)
		}
	})
}
