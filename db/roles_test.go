package db_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"patchbay"
)

func TestListRoles(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	signIn(t, d, "a", "a@example.test")
	signIn(t, d, "b", "b@example.test")
	if _, err := d.CreateRole(ctx, 0, "auditors", nil); err != nil {
		t.Fatal(err)
	}
	roles, err := d.ListRoles(ctx)
	if err != nil {
		t.Fatalf("ListRoles: %v", err)
	}
	var names []string
	members := map[string]int{}
	for _, r := range roles {
		names = append(names, r.Name)
		members[r.Name] = r.Members
	}
	if want := []string{"admin", "support", "user", "auditors"}; !slices.Equal(names, want) {
		t.Errorf("role order: got %v; want %v (built-in first, then by name)", names, want)
	}
	if members["user"] != 2 || members["admin"] != 0 || members["auditors"] != 0 {
		t.Errorf("members: got %v; want user 2, others 0", members)
	}
	for _, r := range roles {
		if r.BuiltIn != (r.Name != "auditors") {
			t.Errorf("%s BuiltIn: got %v; want %v", r.Name, r.BuiltIn, r.Name != "auditors")
		}
		if r.Name == patchbay.RoleUser && !slices.Equal(r.Capabilities, sortedCaps(patchbay.SelfServiceCapabilities)) {
			t.Errorf("user capabilities: got %v; want %v", r.Capabilities, sortedCaps(patchbay.SelfServiceCapabilities))
		}
	}
}

func sortedCaps(cs []patchbay.Capability) []patchbay.Capability {
	out := slices.Clone(cs)
	slices.Sort(out)
	return slices.Compact(out)
}

func TestCreateRole(t *testing.T) {
	ctx := context.Background()

	t.Run("seeds self-service capabilities", func(t *testing.T) {
		d := openTestDB(t)
		extra := []patchbay.Capability{patchbay.CapInspectLogins, patchbay.CapAPITokens}
		r, err := d.CreateRole(ctx, 0, "auditors", extra)
		if err != nil {
			t.Fatalf("CreateRole: %v", err)
		}
		want := sortedCaps(append(slices.Clone(patchbay.SelfServiceCapabilities), extra...))
		if r.Name != "auditors" || r.BuiltIn || !slices.Equal(r.Capabilities, want) {
			t.Errorf("role: got %+v; want auditors, not built-in, capabilities %v", r, want)
		}
		stored, err := d.Role(ctx, "auditors")
		if err != nil || !slices.Equal(stored.Capabilities, want) {
			t.Errorf("Role(auditors): got %v, %v; want %v", stored.Capabilities, err, want)
		}
	})

	t.Run("bad names are invalid", func(t *testing.T) {
		d := openTestDB(t)
		for _, name := range []string{"", "a", "Auditors", "1st", "-x", "has space", "a/b", "dots.no", strings.Repeat("a", 33), "ü-ber"} {
			_, err := d.CreateRole(ctx, 0, name, nil)
			wantCode(t, "CreateRole("+name+")", err, patchbay.EINVALID)
		}
		if n := countRows(t, d, "roles", "built_in = 0"); n != 0 {
			t.Errorf("custom roles: got %d; want 0", n)
		}
	})

	t.Run("longest and shortest valid names are accepted", func(t *testing.T) {
		d := openTestDB(t)
		for _, name := range []string{"ab", "a" + strings.Repeat("z9_-", 7) + "xyz"} {
			if _, err := d.CreateRole(ctx, 0, name, nil); err != nil {
				t.Errorf("CreateRole(%q): got %v; want nil", name, err)
			}
		}
	})

	t.Run("duplicates conflict", func(t *testing.T) {
		d := openTestDB(t)
		if _, err := d.CreateRole(ctx, 0, "auditors", nil); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"auditors", patchbay.RoleAdmin, patchbay.RoleUser} {
			_, err := d.CreateRole(ctx, 0, name, nil)
			wantCode(t, "CreateRole("+name+") again", err, patchbay.ECONFLICT)
		}
	})

	t.Run("unknown capability is invalid and creates nothing", func(t *testing.T) {
		d := openTestDB(t)
		_, err := d.CreateRole(ctx, 0, "rooters", []patchbay.Capability{patchbay.CapUsersManage, "root.everything"})
		wantCode(t, "CreateRole(unknown capability)", err, patchbay.EINVALID)
		_, err = d.Role(ctx, "rooters")
		wantCode(t, "Role(rooters)", err, patchbay.ENOTFOUND)
	})

	t.Run("unknown role is not found", func(t *testing.T) {
		d := openTestDB(t)
		_, err := d.Role(ctx, "nobody")
		wantCode(t, "Role(nobody)", err, patchbay.ENOTFOUND)
	})
}
