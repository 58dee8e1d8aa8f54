package db_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"patchbay"
)

func TestCreateAPIToken(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	clock := useTestClock(t, d)
	u := signIn(t, d, "olga", "olga@example.test")
	secret, tok, err := d.CreateAPIToken(ctx, u.ID, "  laptop cli  ")
	if err != nil {
		t.Fatalf("CreateAPIToken: %v", err)
	}

	t.Run("secret is a pbt_ token with 256 bits", func(t *testing.T) {
		if !strings.HasPrefix(secret, "pbt_") || len(secret) < len("pbt_")+43 {
			t.Errorf("secret: got %d chars starting %q; want pbt_ and 43+ random chars", len(secret), secret[:min(4, len(secret))])
		}
	})
	t.Run("record carries only a short prefix", func(t *testing.T) {
		if tok.ID == 0 || tok.UserID != u.ID || tok.Name != "laptop cli" || !tok.CreatedAt.Equal(clock.Now()) || tok.LastUsedAt != nil {
			t.Errorf("token: got %+v; want id set, user %d, name %q, created %v, never used", tok, u.ID, "laptop cli", clock.Now())
		}
		if tok.Prefix != secret[:10] {
			t.Errorf("prefix: got %q; want %q", tok.Prefix, secret[:10])
		}
		if strings.Contains(fmt.Sprintf("%+v", tok), secret) {
			t.Error("token record formats with the secret in it")
		}
	})
	t.Run("listed without the secret", func(t *testing.T) {
		ts, err := d.ListAPITokens(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) != 1 || ts[0].ID != tok.ID {
			t.Fatalf("ListAPITokens: got %+v; want the one token", ts)
		}
		if strings.Contains(fmt.Sprintf("%+v", ts), secret) {
			t.Error("listed tokens format with the secret in them")
		}
	})
	t.Run("stored only hashed", func(t *testing.T) {
		if dump := dumpTable(t, d, "api_tokens"); strings.Contains(dump, secret) || strings.Contains(dump, secret[len("pbt_"):]) {
			t.Error("api_tokens table holds the secret")
		}
		checkpoint(t, d)
		if !fileContains(t, d.Path(), tok.Prefix) {
			t.Fatal("control: token prefix not found in the database file; the search is broken")
		}
		assertNotInFiles(t, secret, dbFiles(d.Path())...)
		assertNotInFiles(t, secret[len("pbt_"):], dbFiles(d.Path())...)
	})
	t.Run("bad names are invalid", func(t *testing.T) {
		for _, name := range []string{"", "   ", strings.Repeat("n", 101)} {
			_, _, err := d.CreateAPIToken(ctx, u.ID, name)
			wantCode(t, fmt.Sprintf("CreateAPIToken(%d-char name)", len(name)), err, patchbay.EINVALID)
		}
	})
}

func TestAPITokenPrincipal(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	clock := useTestClock(t, d)
	u := signIn(t, d, "pia", "pia@example.test")
	secret, _, err := d.CreateAPIToken(ctx, u.ID, "ci")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("resolves the token", func(t *testing.T) {
		p, err := d.APITokenPrincipal(ctx, secret)
		if err != nil {
			t.Fatalf("APITokenPrincipal: %v", err)
		}
		if p.User.ID != u.ID || !p.ViaToken || p.Role.Name != patchbay.RoleUser || p.CSRFToken != "" || p.SessionID != "" {
			t.Errorf("principal: got %+v; want user %d via token, role user, no session", p, u.ID)
		}
	})
	t.Run("records when it was last used", func(t *testing.T) {
		clock.Advance(time.Hour)
		if _, err := d.APITokenPrincipal(ctx, secret); err != nil {
			t.Fatal(err)
		}
		ts, err := d.ListAPITokens(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) != 1 || ts[0].LastUsedAt == nil || !ts[0].LastUsedAt.Equal(clock.Now()) {
			t.Errorf("last used: got %+v; want %v", ts, clock.Now())
		}
	})
	t.Run("wrong tokens are unauthorized", func(t *testing.T) {
		for _, c := range []struct{ name, token string }{
			{"empty", ""},
			{"prefix only", "pbt_"},
			{"one character more", secret + "x"},
			{"one character less", secret[:len(secret)-1]},
			{"without its prefix", strings.TrimPrefix(secret, "pbt_")},
			{"last character changed", secret[:len(secret)-1] + string(secret[len(secret)-1]^1)},
			{"another token's shape", "pbt_" + strings.Repeat("A", 43)},
		} {
			_, err := d.APITokenPrincipal(ctx, c.token)
			wantCode(t, "APITokenPrincipal("+c.name+")", err, patchbay.EUNAUTHORIZED)
		}
	})
}

func TestRevokeAPIToken(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	alice := signIn(t, d, "alice", "alice@example.test")
	bob := signIn(t, d, "bob", "bob@example.test")
	aliceSecret, aliceTok, err := d.CreateAPIToken(ctx, alice.ID, "alice's")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("another user's token id is not found and the token keeps working", func(t *testing.T) {
		wantCode(t, "bob revokes alice's token", d.RevokeAPIToken(ctx, bob.ID, aliceTok.ID), patchbay.ENOTFOUND)
		p, err := d.APITokenPrincipal(ctx, aliceSecret)
		if err != nil || p.User.ID != alice.ID {
			t.Errorf("alice's token after bob's attempt: got %v; want it to resolve to alice", err)
		}
	})
	t.Run("an id that never existed is not found", func(t *testing.T) {
		wantCode(t, "revoke unknown id", d.RevokeAPIToken(ctx, alice.ID, aliceTok.ID+1000), patchbay.ENOTFOUND)
	})
	t.Run("the owner revokes it and it stops resolving", func(t *testing.T) {
		if err := d.RevokeAPIToken(ctx, alice.ID, aliceTok.ID); err != nil {
			t.Fatalf("RevokeAPIToken: %v", err)
		}
		_, err := d.APITokenPrincipal(ctx, aliceSecret)
		wantCode(t, "APITokenPrincipal(revoked)", err, patchbay.EUNAUTHORIZED)
		ts, err := d.ListAPITokens(ctx, alice.ID)
		if err != nil || len(ts) != 0 {
			t.Errorf("ListAPITokens after revoke: got %v, %v; want none", ts, err)
		}
		wantCode(t, "revoke twice", d.RevokeAPIToken(ctx, alice.ID, aliceTok.ID), patchbay.ENOTFOUND)
	})
}
