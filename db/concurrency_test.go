package db_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"patchbay/db"
	"patchbay/db/seal"
)

// TestConcurrentWriters starts 100 goroutines at once, each signing in a
// user, minting a token, resolving it (which also writes last_used_at) and
// storing a setting, and requires that not one call fails. With two
// handles on one file the handles contend through SQLite's own lock, as
// `patchbay user add` does beside a running server.
func TestConcurrentWriters(t *testing.T) {
	const writers = 100
	tests := []struct {
		name    string
		handles int
	}{
		{"one handle", 1},
		{"two handles on one file", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			path := testDBPath(t)
			keys := seal.NewKeyring(newTestKey(t))
			handles := make([]*db.DB, tt.handles)
			for i := range handles {
				handles[i] = openTestDBAt(t, path, keys)
			}

			start := make(chan struct{})
			errs := make(chan error, writers*4)
			var wg sync.WaitGroup
			for i := range writers {
				d := handles[i%len(handles)]
				wg.Go(func() {
					<-start
					u, err := d.SignInUser(ctx, db.SignIn{Issuer: testIssuer, Subject: fmt.Sprintf("w%03d", i),
						Email: fmt.Sprintf("w%03d@example.test", i), EmailVerified: true}, nil)
					if err != nil {
						errs <- fmt.Errorf("writer %d: SignInUser: %w", i, err)
						return
					}
					secret, _, err := d.CreateAPIToken(ctx, u.ID, fmt.Sprintf("token %d", i))
					if err != nil {
						errs <- fmt.Errorf("writer %d: CreateAPIToken: %w", i, err)
						return
					}
					if err := d.SetMeta(ctx, fmt.Sprintf("writer.%03d", i), secret[:10]); err != nil {
						errs <- fmt.Errorf("writer %d: SetMeta: %w", i, err)
					}
					p, err := d.APITokenPrincipal(ctx, secret)
					if err != nil {
						errs <- fmt.Errorf("writer %d: APITokenPrincipal: %w", i, err)
					} else if p.User.ID != u.ID {
						errs <- fmt.Errorf("writer %d: token resolved to user %d; want %d", i, p.User.ID, u.ID)
					}
				})
			}
			close(start)
			wg.Wait()
			close(errs)

			var locked, other int
			for err := range errs {
				if strings.Contains(err.Error(), "database is locked") || strings.Contains(err.Error(), "busy") {
					locked++
				} else {
					other++
				}
				t.Error(err)
			}
			if locked > 0 || other > 0 {
				t.Fatalf("errors: got %d lock errors and %d others; want none", locked, other)
			}
			if err := ctx.Err(); errors.Is(err, context.DeadlineExceeded) {
				t.Fatal("writers did not finish before the deadline")
			}

			d := handles[0]
			for _, c := range []struct {
				table, where string
				want         int
			}{
				{"users", "", writers},
				{"api_tokens", "", writers},
				{"api_tokens", "last_used_at IS NOT NULL", writers},
				{"meta", "key LIKE 'writer.%'", writers},
				{"audit_log", "action = 'user.sign_in'", writers},
				{"audit_log", "action = 'token.create'", writers},
			} {
				if got := countRows(t, d, c.table, c.where); got != c.want {
					t.Errorf("rows in %s where %q: got %d; want %d", c.table, c.where, got, c.want)
				}
			}
			if err := db.CheckIntegrity(ctx, path); err != nil {
				t.Errorf("CheckIntegrity: %v", err)
			}
		})
	}
}
