package db_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"patchbay"
)

func TestSessionResolvesPrincipal(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	useTestClock(t, d)
	u := signIn(t, d, "jo", "jo@example.test")
	token, err := d.CreateSession(ctx, u.ID, testPolicy)
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	if len(token) < 43 {
		t.Errorf("token length: got %d; want at least 43 (256 bits)", len(token))
	}
	p, err := d.Session(ctx, token, testPolicy)
	if err != nil {
		t.Fatalf("Session: %v", err)
	}
	if p.User.ID != u.ID || p.Role.Name != patchbay.RoleUser || p.ViaToken {
		t.Errorf("principal: got user %d role %q via token %v; want %d, user, false", p.User.ID, p.Role.Name, p.ViaToken, u.ID)
	}
	if want := sortedCaps(patchbay.SelfServiceCapabilities); !slices.Equal(p.Role.Capabilities, want) {
		t.Errorf("capabilities: got %v; want %v", p.Role.Capabilities, want)
	}
	if !p.Can(patchbay.CapAPITokens) || p.Can(patchbay.CapUsersManage) {
		t.Errorf("Can: got api.tokens %v, users.manage %v; want true, false", p.Can(patchbay.CapAPITokens), p.Can(patchbay.CapUsersManage))
	}
	if len(p.CSRFToken) < 43 || p.SessionID == "" || p.SessionID == token {
		t.Errorf("principal: got CSRF %q, session id %q; want a long CSRF token and an id that is not the cookie", p.CSRFToken, p.SessionID)
	}

	t.Run("each session has its own token and CSRF token", func(t *testing.T) {
		other, err := d.CreateSession(ctx, u.ID, testPolicy)
		if err != nil {
			t.Fatal(err)
		}
		p2, err := d.Session(ctx, other, testPolicy)
		if err != nil {
			t.Fatal(err)
		}
		if other == token || p2.CSRFToken == p.CSRFToken || p2.SessionID == p.SessionID {
			t.Error("second session: got a repeated token, CSRF token or id; want all fresh")
		}
	})

	t.Run("role changes apply to live sessions", func(t *testing.T) {
		if err := d.SetUserRole(ctx, 0, u.ID, patchbay.RoleAdmin); err != nil {
			t.Fatal(err)
		}
		p, err := d.Session(ctx, token, testPolicy)
		if err != nil {
			t.Fatal(err)
		}
		if !p.Can(patchbay.CapUsersManage) {
			t.Errorf("admin Can(users.manage): got false; want true")
		}
	})
}

func TestSessionTimeouts(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		steps  []time.Duration // clock moves, each followed by a Session call
		wantOK bool            // whether the last call succeeds
	}{
		{"used just before the idle timeout", []time.Duration{testPolicy.Idle - time.Second}, true},
		{"idle for exactly the idle timeout ends", []time.Duration{testPolicy.Idle}, false},
		{"idle past the idle timeout ends", []time.Duration{testPolicy.Idle + time.Hour}, false},
		{"activity extends the idle window", []time.Duration{20 * time.Minute, 20 * time.Minute, 20 * time.Minute}, true},
		{"past the absolute timeout ends", []time.Duration{testPolicy.MaxAge + time.Second}, false},
		{"activity does not extend the absolute timeout", slices.Repeat([]time.Duration{20 * time.Minute}, int(testPolicy.MaxAge/(20*time.Minute))), false},
		{"active until just before the absolute timeout", append(slices.Repeat([]time.Duration{20 * time.Minute}, int(testPolicy.MaxAge/(20*time.Minute))-1), 19*time.Minute+59*time.Second), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := openTestDB(t)
			clock := useTestClock(t, d)
			u := signIn(t, d, "kim", "kim@example.test")
			token, err := d.CreateSession(ctx, u.ID, testPolicy)
			if err != nil {
				t.Fatal(err)
			}
			for i, step := range tt.steps {
				clock.Advance(step)
				_, err = d.Session(ctx, token, testPolicy)
				if i < len(tt.steps)-1 && err != nil {
					t.Fatalf("step %d (%v): Session: got %v; want nil", i, step, err)
				}
			}
			exists, xerr := d.SessionExists(ctx, token)
			if xerr != nil {
				t.Fatal(xerr)
			}
			if tt.wantOK {
				if err != nil || !exists {
					t.Errorf("Session: got %v (stored %v); want nil and stored", err, exists)
				}
				return
			}
			wantCode(t, "Session", err, patchbay.EUNAUTHORIZED)
			if exists {
				t.Error("ended session: got still stored; want deleted")
			}
		})
	}
}

func TestCreateSessionSweepsDeadSessions(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	clock := useTestClock(t, d)
	u := signIn(t, d, "lea", "lea@example.test")
	old, err := d.CreateSession(ctx, u.ID, testPolicy)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(testPolicy.Idle + time.Minute)
	if _, err := d.CreateSession(ctx, u.ID, testPolicy); err != nil {
		t.Fatal(err)
	}
	if ok, _ := d.SessionExists(ctx, old); ok {
		t.Error("idle session after a new sign-in: got stored; want swept")
	}
}

func TestSessionRefusals(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	u := signIn(t, d, "max", "max@example.test")

	t.Run("unknown token", func(t *testing.T) {
		for _, tok := range []string{"", "not-a-session", strings.Repeat("A", 43)} {
			_, err := d.Session(ctx, tok, testPolicy)
			wantCode(t, "Session("+tok+")", err, patchbay.EUNAUTHORIZED)
		}
	})

	t.Run("disabled user's session is refused", func(t *testing.T) {
		token, err := d.CreateSession(ctx, u.ID, testPolicy)
		if err != nil {
			t.Fatal(err)
		}
		// Disable behind the store's back, so the session row survives and
		// the refusal must come from the disabled flag itself.
		if _, err := d.Writer().ExecContext(ctx, `UPDATE users SET disabled = 1 WHERE id = ?`, u.ID); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Writer().ExecContext(ctx, `UPDATE users SET disabled = 0 WHERE id = ?`, u.ID) })
		_, err = d.Session(ctx, token, testPolicy)
		wantCode(t, "Session(disabled user)", err, patchbay.EUNAUTHORIZED)
	})

	t.Run("deleted session is refused", func(t *testing.T) {
		token, err := d.CreateSession(ctx, u.ID, testPolicy)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.DeleteSession(ctx, token); err != nil {
			t.Fatalf("DeleteSession: %v", err)
		}
		_, err = d.Session(ctx, token, testPolicy)
		wantCode(t, "Session(deleted)", err, patchbay.EUNAUTHORIZED)
		if ok, _ := d.SessionExists(ctx, token); ok {
			t.Error("deleted session: got stored; want gone")
		}
		if err := d.DeleteSession(ctx, token); err != nil {
			t.Errorf("DeleteSession twice: got %v; want nil", err)
		}
	})
}

func TestSessionTokenNotStored(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	u := signIn(t, d, "ned", "ned@example.test")
	var tokens, csrf []string
	for range 3 {
		tok, err := d.CreateSession(ctx, u.ID, testPolicy)
		if err != nil {
			t.Fatal(err)
		}
		p, err := d.Session(ctx, tok, testPolicy)
		if err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, tok)
		csrf = append(csrf, p.CSRFToken)
	}
	dump := dumpTable(t, d, "sessions")
	if strings.Count(dump, "\n") != len(tokens) {
		t.Fatalf("sessions rows: got %d; want %d", strings.Count(dump, "\n"), len(tokens))
	}
	checkpoint(t, d)
	// Control: the CSRF tokens are stored in plain text, so the same search
	// does find values that are there.
	for i, c := range csrf {
		if !fileContains(t, d.Path(), c) {
			t.Fatalf("session %d: CSRF token not found in the database file; the search is broken", i)
		}
	}
	for i, tok := range tokens {
		if strings.Contains(dump, tok) {
			t.Errorf("session %d: sessions table holds the raw token", i)
		}
		assertNotInFiles(t, tok, dbFiles(d.Path())...)
	}
}
