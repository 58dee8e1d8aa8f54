package db_test

import (
	"context"
	"testing"
	"time"

	"patchbay"
	"patchbay/db"
)

func TestSignInUserCreates(t *testing.T) {
	admins := []string{"Root@Example.test", " boss@example.test "}
	tests := []struct {
		name      string
		in        db.SignIn
		wantRole  string
		wantEmail string
	}{
		{"verified admin email gets admin",
			db.SignIn{Subject: "s1", Email: "root@example.test", EmailVerified: true}, patchbay.RoleAdmin, "root@example.test"},
		{"admin email matches ignoring case and spaces",
			db.SignIn{Subject: "s2", Email: "  BOSS@example.TEST ", EmailVerified: true}, patchbay.RoleAdmin, "boss@example.test"},
		{"unverified admin email does not get admin",
			db.SignIn{Subject: "s3", Email: "root@example.test", EmailVerified: false}, patchbay.RoleUser, ""},
		{"verified other email gets user",
			db.SignIn{Subject: "s4", Email: "someone@example.test", EmailVerified: true}, patchbay.RoleUser, "someone@example.test"},
		{"no email gets user",
			db.SignIn{Subject: "s5", EmailVerified: true}, patchbay.RoleUser, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := openTestDB(t)
			clock := useTestClock(t, d)
			in := tt.in
			in.Issuer, in.Name = testIssuer, "Person "+in.Subject
			u, err := d.SignInUser(context.Background(), in, admins)
			if err != nil {
				t.Fatalf("SignInUser: %v", err)
			}
			if u.ID == 0 || u.Issuer != testIssuer || u.Subject != in.Subject || u.Name != in.Name {
				t.Errorf("user: got %+v; want id set, issuer %q, subject %q, name %q", u, testIssuer, in.Subject, in.Name)
			}
			if u.Role != tt.wantRole {
				t.Errorf("role: got %q; want %q", u.Role, tt.wantRole)
			}
			if u.Email != tt.wantEmail {
				t.Errorf("email: got %q; want %q", u.Email, tt.wantEmail)
			}
			if !u.CreatedAt.Equal(clock.Now()) || u.LastSeen == nil || !u.LastSeen.Equal(clock.Now()) {
				t.Errorf("times: got created %v, last seen %v; want both %v", u.CreatedAt, u.LastSeen, clock.Now())
			}
		})
	}
}

func TestSignInUserRejectsMissingIdentity(t *testing.T) {
	d := openTestDB(t)
	for _, in := range []db.SignIn{
		{Subject: "no-issuer", Email: "a@example.test", EmailVerified: true},
		{Issuer: testIssuer, Email: "a@example.test", EmailVerified: true},
	} {
		_, err := d.SignInUser(context.Background(), in, nil)
		wantCode(t, "SignInUser("+in.Issuer+","+in.Subject+")", err, patchbay.EINVALID)
	}
	if n := countRows(t, d, "users", ""); n != 0 {
		t.Errorf("users: got %d; want 0", n)
	}
}

func TestSignInUserAgainUpdatesProfile(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	clock := useTestClock(t, d)
	admins := []string{"first@example.test"}
	first, err := d.SignInUser(ctx, db.SignIn{Issuer: testIssuer, Subject: "ada", Email: "first@example.test",
		Name: "Ada", EmailVerified: true}, admins)
	if err != nil {
		t.Fatalf("first SignInUser: %v", err)
	}
	clock.Advance(48 * time.Hour)
	// The new email is not an admin email and the old one is, yet the role
	// stays: roles are decided once, at creation.
	second, err := d.SignInUser(ctx, db.SignIn{Issuer: testIssuer, Subject: "ada", Email: "Second@Example.test",
		Name: "Ada Lovelace", EmailVerified: true}, nil)
	if err != nil {
		t.Fatalf("second SignInUser: %v", err)
	}
	if second.ID != first.ID {
		t.Errorf("id: got %d; want %d", second.ID, first.ID)
	}
	if second.Role != patchbay.RoleAdmin {
		t.Errorf("role: got %q; want %q (kept)", second.Role, patchbay.RoleAdmin)
	}
	if second.Email != "second@example.test" || second.Name != "Ada Lovelace" {
		t.Errorf("profile: got email %q, name %q; want %q, %q", second.Email, second.Name, "second@example.test", "Ada Lovelace")
	}
	if second.LastSeen == nil || !second.LastSeen.Equal(clock.Now()) {
		t.Errorf("last seen: got %v; want %v", second.LastSeen, clock.Now())
	}
	if !second.CreatedAt.Equal(first.CreatedAt) {
		t.Errorf("created at: got %v; want %v (unchanged)", second.CreatedAt, first.CreatedAt)
	}
	if n := countRows(t, d, "users", ""); n != 1 {
		t.Errorf("users: got %d; want 1", n)
	}
}

func TestSignInUserKeyedByIssuerAndSubject(t *testing.T) {
	ctx := context.Background()
	const email = "shared@example.test"
	admins := []string{email}
	tests := []struct {
		name  string
		other db.SignIn
	}{
		{"same email from another issuer is another user",
			db.SignIn{Issuer: "https://other-idp.example.test", Subject: "orig", Email: email, EmailVerified: true}},
		{"same email with another subject is another user",
			db.SignIn{Issuer: testIssuer, Subject: "impostor", Email: email, EmailVerified: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := openTestDB(t)
			orig, err := d.SignInUser(ctx, db.SignIn{Issuer: testIssuer, Subject: "orig", Email: email, EmailVerified: true}, admins)
			if err != nil {
				t.Fatalf("SignInUser(orig): %v", err)
			}
			// The admin list is not consulted, so this is about identity only.
			other, err := d.SignInUser(ctx, tt.other, nil)
			if err != nil {
				t.Fatalf("SignInUser(other): %v", err)
			}
			if other.ID == orig.ID {
				t.Fatalf("other identity: got user id %d; want a new user", other.ID)
			}
			if other.Role != patchbay.RoleUser {
				t.Errorf("other identity role: got %q; want %q", other.Role, patchbay.RoleUser)
			}
			again, err := d.UserByID(ctx, orig.ID)
			if err != nil {
				t.Fatal(err)
			}
			if again.Issuer != testIssuer || again.Subject != "orig" || again.Role != patchbay.RoleAdmin {
				t.Errorf("original user: got %+v; want untouched", again)
			}
		})
	}
}

func TestAddUserInvites(t *testing.T) {
	ctx := context.Background()

	t.Run("first verified sign-in claims the invite and its role", func(t *testing.T) {
		d := openTestDB(t)
		inv, err := d.AddUser(ctx, " Carol@Example.test ", patchbay.RoleSupport)
		if err != nil {
			t.Fatalf("AddUser: %v", err)
		}
		if inv.Email != "carol@example.test" || inv.Role != patchbay.RoleSupport || inv.Issuer != "" {
			t.Fatalf("invite: got %+v; want email carol@example.test, role support, no issuer", inv)
		}
		u, err := d.SignInUser(ctx, db.SignIn{Issuer: testIssuer, Subject: "carol", Email: "CAROL@example.test",
			Name: "Carol", EmailVerified: true}, []string{"carol@example.test"})
		if err != nil {
			t.Fatalf("SignInUser: %v", err)
		}
		if u.ID != inv.ID || u.Role != patchbay.RoleSupport || u.Issuer != testIssuer || u.Subject != "carol" || u.Name != "Carol" {
			t.Errorf("claimed user: got %+v; want id %d, role support, keyed by (%s, carol)", u, inv.ID, testIssuer)
		}
		// The invite is spent: another identity with the same email is a
		// new plain user.
		other, err := d.SignInUser(ctx, db.SignIn{Issuer: testIssuer, Subject: "carol2", Email: "carol@example.test",
			EmailVerified: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if other.ID == inv.ID || other.Role != patchbay.RoleUser {
			t.Errorf("second identity: got id %d role %q; want a new user with role user", other.ID, other.Role)
		}
	})

	t.Run("unverified sign-in does not claim the invite", func(t *testing.T) {
		d := openTestDB(t)
		inv, err := d.AddUser(ctx, "dan@example.test", patchbay.RoleAdmin)
		if err != nil {
			t.Fatalf("AddUser: %v", err)
		}
		u, err := d.SignInUser(ctx, db.SignIn{Issuer: testIssuer, Subject: "mallory", Email: "dan@example.test",
			EmailVerified: false}, nil)
		if err != nil {
			t.Fatalf("unverified SignInUser: %v", err)
		}
		if u.ID == inv.ID || u.Role != patchbay.RoleUser {
			t.Errorf("unverified user: got id %d role %q; want a new user with role user", u.ID, u.Role)
		}
		still, err := d.UserByID(ctx, inv.ID)
		if err != nil || still.Issuer != "" || still.Role != patchbay.RoleAdmin {
			t.Fatalf("invite after unverified sign-in: got %+v, %v; want unclaimed admin invite", still, err)
		}
		dan, err := d.SignInUser(ctx, db.SignIn{Issuer: testIssuer, Subject: "dan", Email: "dan@example.test",
			EmailVerified: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if dan.ID != inv.ID || dan.Role != patchbay.RoleAdmin {
			t.Errorf("verified sign-in after: got id %d role %q; want id %d role admin", dan.ID, dan.Role, inv.ID)
		}
	})

	// An unverified email is whatever someone typed at their provider; it
	// must not make AddUser or UserByEmail pick that account.
	t.Run("unverified email cannot attract a later grant", func(t *testing.T) {
		d := openTestDB(t)
		mallory, err := d.SignInUser(ctx, db.SignIn{Issuer: testIssuer, Subject: "mallory", Email: "boss@example.test",
			EmailVerified: false}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.UserByEmail(ctx, "boss@example.test"); patchbay.ErrorCode(err) != patchbay.ENOTFOUND {
			t.Errorf("UserByEmail(boss): got %v; want ENOTFOUND (mallory's email is unverified)", err)
		}
		inv, err := d.AddUser(ctx, "boss@example.test", patchbay.RoleAdmin)
		if err != nil {
			t.Fatal(err)
		}
		if inv.ID == mallory.ID {
			t.Errorf("AddUser(boss, admin): got mallory's account %d; want a new invite", mallory.ID)
		}
		m, err := d.UserByID(ctx, mallory.ID)
		if err != nil {
			t.Fatal(err)
		}
		if m.Role != patchbay.RoleUser {
			t.Errorf("mallory's role: got %q; want %q", m.Role, patchbay.RoleUser)
		}
	})

	t.Run("adding an existing email changes that user's role", func(t *testing.T) {
		d := openTestDB(t)
		u := signIn(t, d, "erin", "erin@example.test")
		got, err := d.AddUser(ctx, "erin@example.test", patchbay.RoleSupport)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != u.ID || got.Role != patchbay.RoleSupport {
			t.Errorf("AddUser existing: got id %d role %q; want id %d role support", got.ID, got.Role, u.ID)
		}
	})

	t.Run("bad input is rejected", func(t *testing.T) {
		d := openTestDB(t)
		for _, c := range []struct{ email, role, code string }{
			{"not-an-email", patchbay.RoleUser, patchbay.EINVALID},
			{"", patchbay.RoleUser, patchbay.EINVALID},
			{"x@example.test", "no-such-role", patchbay.EINVALID},
		} {
			_, err := d.AddUser(ctx, c.email, c.role)
			wantCode(t, "AddUser("+c.email+", "+c.role+")", err, c.code)
		}
		if n := countRows(t, d, "users", ""); n != 0 {
			t.Errorf("users: got %d; want 0", n)
		}
	})

	t.Run("an empty entry in the admin list matches no one", func(t *testing.T) {
		d := openTestDB(t)
		u, err := d.SignInUser(ctx, db.SignIn{Issuer: testIssuer, Subject: "noemail", EmailVerified: true}, []string{"", " "})
		if err != nil {
			t.Fatal(err)
		}
		if u.Role != patchbay.RoleUser {
			t.Errorf("role: got %q; want %q", u.Role, patchbay.RoleUser)
		}
	})
}

func TestUserLookups(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	u := signIn(t, d, "fay", "fay@example.test")

	t.Run("by email ignores case", func(t *testing.T) {
		got, err := d.UserByEmail(ctx, " FAY@example.test")
		if err != nil || got.ID != u.ID {
			t.Errorf("UserByEmail: got %d, %v; want %d, nil", got.ID, err, u.ID)
		}
	})
	t.Run("unknown id is not found", func(t *testing.T) {
		_, err := d.UserByID(ctx, u.ID+1000)
		wantCode(t, "UserByID", err, patchbay.ENOTFOUND)
	})
	t.Run("unknown email is not found", func(t *testing.T) {
		_, err := d.UserByEmail(ctx, "nobody@example.test")
		wantCode(t, "UserByEmail", err, patchbay.ENOTFOUND)
	})
	t.Run("list counts live sessions", func(t *testing.T) {
		if _, err := d.CreateSession(ctx, u.ID, testPolicy); err != nil {
			t.Fatal(err)
		}
		us, err := d.ListUsers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(us) != 1 || us[0].ID != u.ID || us[0].Sessions != 1 {
			t.Errorf("ListUsers: got %+v; want fay with 1 session", us)
		}
	})
}

func TestSetUserRole(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	admin := signIn(t, d, "admin", "admin@example.test")
	u := signIn(t, d, "gus", "gus@example.test")

	t.Run("changes the role", func(t *testing.T) {
		if err := d.SetUserRole(ctx, admin.ID, u.ID, patchbay.RoleSupport); err != nil {
			t.Fatalf("SetUserRole: %v", err)
		}
		got, err := d.UserByID(ctx, u.ID)
		if err != nil || got.Role != patchbay.RoleSupport {
			t.Errorf("role: got %q, %v; want support", got.Role, err)
		}
	})
	t.Run("unknown role is invalid", func(t *testing.T) {
		wantCode(t, "SetUserRole(unknown role)", d.SetUserRole(ctx, admin.ID, u.ID, "wizard"), patchbay.EINVALID)
	})
	t.Run("unknown user is not found", func(t *testing.T) {
		wantCode(t, "SetUserRole(unknown user)", d.SetUserRole(ctx, admin.ID, u.ID+1000, patchbay.RoleUser), patchbay.ENOTFOUND)
	})
}

func TestSetUserDisabled(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	admin := signIn(t, d, "admin", "admin@example.test")
	hal := signIn(t, d, "hal", "hal@example.test")
	ivy := signIn(t, d, "ivy", "ivy@example.test")
	halSessions := make([]string, 2)
	for i := range halSessions {
		s, err := d.CreateSession(ctx, hal.ID, testPolicy)
		if err != nil {
			t.Fatal(err)
		}
		halSessions[i] = s
	}
	ivySession, err := d.CreateSession(ctx, ivy.ID, testPolicy)
	if err != nil {
		t.Fatal(err)
	}
	halSecret, _, err := d.CreateAPIToken(ctx, hal.ID, "cli")
	if err != nil {
		t.Fatal(err)
	}

	if err := d.SetUserDisabled(ctx, admin.ID, hal.ID, true); err != nil {
		t.Fatalf("SetUserDisabled: %v", err)
	}
	t.Run("ends every session of that user", func(t *testing.T) {
		for i, s := range halSessions {
			if ok, err := d.SessionExists(ctx, s); err != nil || ok {
				t.Errorf("hal session %d exists: got %v, %v; want false", i, ok, err)
			}
		}
	})
	t.Run("leaves other users' sessions", func(t *testing.T) {
		if ok, err := d.SessionExists(ctx, ivySession); err != nil || !ok {
			t.Errorf("ivy session exists: got %v, %v; want true", ok, err)
		}
		if _, err := d.Session(ctx, ivySession, testPolicy); err != nil {
			t.Errorf("ivy Session: got %v; want nil", err)
		}
	})
	t.Run("disabled user's token is refused", func(t *testing.T) {
		_, err := d.APITokenPrincipal(ctx, halSecret)
		wantCode(t, "APITokenPrincipal(disabled)", err, patchbay.EUNAUTHORIZED)
	})
	t.Run("re-enabling restores tokens but not sessions", func(t *testing.T) {
		if err := d.SetUserDisabled(ctx, admin.ID, hal.ID, false); err != nil {
			t.Fatal(err)
		}
		if _, err := d.APITokenPrincipal(ctx, halSecret); err != nil {
			t.Errorf("APITokenPrincipal after re-enable: got %v; want nil", err)
		}
		if ok, _ := d.SessionExists(ctx, halSessions[0]); ok {
			t.Error("hal session after re-enable: got exists; want gone")
		}
	})
	t.Run("unknown user is not found", func(t *testing.T) {
		wantCode(t, "SetUserDisabled(unknown)", d.SetUserDisabled(ctx, admin.ID, ivy.ID+1000, true), patchbay.ENOTFOUND)
	})
}
