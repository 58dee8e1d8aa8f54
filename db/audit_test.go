package db_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"patchbay"
	"patchbay/db"
)

// auditFixture is a store with an admin, a user with a token, and a clock.
type auditFixture struct {
	d            *db.DB
	clock        *testClock
	admin, user  patchbay.User
	userToken    patchbay.APIToken
	userTokenKey string
}

func newAuditFixture(t *testing.T) *auditFixture {
	t.Helper()
	d := openTestDB(t)
	f := &auditFixture{d: d, clock: useTestClock(t, d)}
	f.admin = signIn(t, d, "admin", "admin@example.test")
	f.user = signIn(t, d, "uma", "uma@example.test")
	var err error
	f.userTokenKey, f.userToken, err = d.CreateAPIToken(context.Background(), f.user.ID, "uma's")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.CreateSession(context.Background(), f.user.ID, testPolicy); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(90 * time.Second)
	return f
}

func TestActionsAreAudited(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// act performs the action and returns the entry it should log;
		// actor 0 means "by the system".
		act func(t *testing.T, f *auditFixture) (action, target, detail string, actor int64)
	}{
		{"sign-in", func(t *testing.T, f *auditFixture) (string, string, string, int64) {
			u := signIn(t, f.d, "vic", "vic@example.test")
			return "user.sign_in", fmt.Sprintf("user:%d", u.ID), "", u.ID
		}},
		{"add user", func(t *testing.T, f *auditFixture) (string, string, string, int64) {
			u, err := f.d.AddUser(ctx, "wes@example.test", patchbay.RoleSupport)
			if err != nil {
				t.Fatal(err)
			}
			return "user.add", fmt.Sprintf("user:%d", u.ID), "role=support", 0
		}},
		{"set role", func(t *testing.T, f *auditFixture) (string, string, string, int64) {
			if err := f.d.SetUserRole(ctx, f.admin.ID, f.user.ID, patchbay.RoleSupport); err != nil {
				t.Fatal(err)
			}
			return "user.set_role", fmt.Sprintf("user:%d", f.user.ID), "role=support", f.admin.ID
		}},
		{"disable user", func(t *testing.T, f *auditFixture) (string, string, string, int64) {
			if err := f.d.SetUserDisabled(ctx, f.admin.ID, f.user.ID, true); err != nil {
				t.Fatal(err)
			}
			return "user.disable", fmt.Sprintf("user:%d", f.user.ID), "", f.admin.ID
		}},
		{"enable user", func(t *testing.T, f *auditFixture) (string, string, string, int64) {
			if err := f.d.SetUserDisabled(ctx, f.admin.ID, f.user.ID, false); err != nil {
				t.Fatal(err)
			}
			return "user.enable", fmt.Sprintf("user:%d", f.user.ID), "", f.admin.ID
		}},
		{"create role", func(t *testing.T, f *auditFixture) (string, string, string, int64) {
			if _, err := f.d.CreateRole(ctx, f.admin.ID, "auditors", []patchbay.Capability{patchbay.CapInspectLogins}); err != nil {
				t.Fatal(err)
			}
			return "role.create", "role:auditors", "[api.tokens mcp.inspect_logins mcp.register_local_from_catalog mcp.register_remote]", f.admin.ID
		}},
		{"create token", func(t *testing.T, f *auditFixture) (string, string, string, int64) {
			_, tok, err := f.d.CreateAPIToken(ctx, f.user.ID, "second")
			if err != nil {
				t.Fatal(err)
			}
			return "token.create", fmt.Sprintf("token:%d", tok.ID), "second", f.user.ID
		}},
		{"revoke token", func(t *testing.T, f *auditFixture) (string, string, string, int64) {
			if err := f.d.RevokeAPIToken(ctx, f.user.ID, f.userToken.ID); err != nil {
				t.Fatal(err)
			}
			return "token.revoke", fmt.Sprintf("token:%d", f.userToken.ID), "", f.user.ID
		}},
		{"save provider", func(t *testing.T, f *auditFixture) (string, string, string, int64) {
			if _, err := f.d.SaveOAuthProvider(ctx, f.admin.ID, testProvider("github"), "s3cret"); err != nil {
				t.Fatal(err)
			}
			return "provider.save", "provider:github", "", f.admin.ID
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newAuditFixture(t)
			before := auditCount(t, f.d)
			action, target, detail, actor := tt.act(t, f)
			if got := auditCount(t, f.d); got != before+1 {
				t.Errorf("audit rows: got %d; want %d", got, before+1)
			}
			es, err := f.d.AuditLog(ctx, 1)
			if err != nil || len(es) != 1 {
				t.Fatalf("AuditLog: got %v, %v; want one entry", es, err)
			}
			e := es[0]
			gotActor := int64(0)
			if e.ActorID != nil {
				gotActor = *e.ActorID
			}
			if e.Action != action || e.Target != target || e.Detail != detail || gotActor != actor {
				t.Errorf("entry: got %s %s %q by %d; want %s %s %q by %d", e.Action, e.Target, e.Detail, gotActor, action, target, detail, actor)
			}
			if !e.At.Equal(f.clock.Now()) {
				t.Errorf("entry time: got %v; want %v", e.At, f.clock.Now())
			}
		})
	}
}

func TestFailedActionsAreNotAudited(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		act  func(f *auditFixture) error
		// unchanged reports what the action must not have changed.
		unchanged func(t *testing.T, f *auditFixture)
	}{
		{"set role to an unknown role", func(f *auditFixture) error {
			return f.d.SetUserRole(ctx, f.admin.ID, f.user.ID, "wizard")
		}, userRoleIs(patchbay.RoleUser)},
		{"set role of an unknown user", func(f *auditFixture) error {
			return f.d.SetUserRole(ctx, f.admin.ID, f.user.ID+1000, patchbay.RoleAdmin)
		}, userRoleIs(patchbay.RoleUser)},
		// The audit row itself fails here (its actor does not exist), so
		// this proves the change and its audit row commit together.
		{"set role whose audit row cannot be written", func(f *auditFixture) error {
			return f.d.SetUserRole(ctx, f.admin.ID+1000, f.user.ID, patchbay.RoleAdmin)
		}, userRoleIs(patchbay.RoleUser)},
		{"disable user whose audit row cannot be written", func(f *auditFixture) error {
			return f.d.SetUserDisabled(ctx, f.admin.ID+1000, f.user.ID, true)
		}, func(t *testing.T, f *auditFixture) {
			t.Helper()
			u, err := f.d.UserByID(ctx, f.user.ID)
			if err != nil || u.Disabled {
				t.Errorf("user: got disabled %v, %v; want still enabled", u.Disabled, err)
			}
			if n := countRows(t, f.d, "sessions", "user_id = ?", f.user.ID); n != 1 {
				t.Errorf("sessions: got %d; want 1 (not ended)", n)
			}
		}},
		{"disable an unknown user", func(f *auditFixture) error {
			return f.d.SetUserDisabled(ctx, f.admin.ID, f.user.ID+1000, true)
		}, nil},
		{"create a duplicate role", func(f *auditFixture) error {
			_, err := f.d.CreateRole(ctx, f.admin.ID, patchbay.RoleSupport, nil)
			return err
		}, nil},
		{"create a role with an unknown capability", func(f *auditFixture) error {
			_, err := f.d.CreateRole(ctx, f.admin.ID, "rooters", []patchbay.Capability{"root"})
			return err
		}, nil},
		{"revoke another user's token", func(f *auditFixture) error {
			return f.d.RevokeAPIToken(ctx, f.admin.ID, f.userToken.ID)
		}, func(t *testing.T, f *auditFixture) {
			t.Helper()
			if _, err := f.d.APITokenPrincipal(ctx, f.userTokenKey); err != nil {
				t.Errorf("token after refused revoke: got %v; want it to resolve", err)
			}
		}},
		{"create a token for a missing user", func(f *auditFixture) error {
			_, _, err := f.d.CreateAPIToken(ctx, f.user.ID+1000, "ghost")
			return err
		}, nil},
		{"add a user with an unknown role", func(f *auditFixture) error {
			_, err := f.d.AddUser(ctx, "xena@example.test", "wizard")
			return err
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newAuditFixture(t)
			before := auditCount(t, f.d)
			if err := tt.act(f); err == nil {
				t.Fatal("action: got nil error; want a failure")
			}
			if got := auditCount(t, f.d); got != before {
				t.Errorf("audit rows: got %d; want %d (nothing logged)", got, before)
			}
			if tt.unchanged != nil {
				tt.unchanged(t, f)
			}
		})
	}
}

func userRoleIs(role string) func(t *testing.T, f *auditFixture) {
	return func(t *testing.T, f *auditFixture) {
		t.Helper()
		u, err := f.d.UserByID(context.Background(), f.user.ID)
		if err != nil || u.Role != role {
			t.Errorf("user role: got %q, %v; want %q", u.Role, err, role)
		}
	}
}
