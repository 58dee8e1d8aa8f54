//go:build unix

package db_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"patchbay/db"
)

// helperWriterEnv names the database a TestHelperWriter child writes to.
// Set, it turns that test from a skip into a writer that never stops.
const helperWriterEnv = "PATCHBAY_DB_TEST_HELPER_WRITER"

// helperValueSize makes each setting span several pages, so a kill in the
// middle of writing one would leave a torn row if writes were not atomic.
const helperValueSize = 16 << 10

// TestHelperWriter is not a test: TestKillMidWrite runs it in a child
// process, where it writes in a loop until it is killed.
func TestHelperWriter(t *testing.T) {
	path := os.Getenv(helperWriterEnv)
	if path == "" {
		t.Skip("helper process for TestKillMidWrite")
	}
	ctx := context.Background()
	d, err := db.Open(ctx, path, nil)
	if err != nil {
		t.Fatalf("child: Open: %v", err)
	}
	u, err := d.SignInUser(ctx, db.SignIn{Issuer: testIssuer, Subject: "writer", EmailVerified: true}, nil)
	if err != nil {
		t.Fatalf("child: SignInUser: %v", err)
	}
	// Bounded, so an orphaned child cannot write forever.
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		if _, _, err := d.CreateAPIToken(ctx, u.ID, fmt.Sprintf("child %d", i)); err != nil {
			t.Fatalf("child: CreateAPIToken: %v", err)
		}
		v := strings.Repeat(string(rune('a'+i%26)), helperValueSize)
		if err := d.SetMeta(ctx, fmt.Sprintf("child.%d", i%50), v); err != nil {
			t.Fatalf("child: SetMeta: %v", err)
		}
	}
	t.Fatal("child: never killed")
}

// TestKillMidWrite SIGKILLs a process that is writing as fast as it can,
// several times over, and checks after each kill that the database is
// intact, opens, and holds whole transactions only.
func TestKillMidWrite(t *testing.T) {
	ctx := context.Background()
	path := testDBPath(t)
	// Migrate first, so the children only ever write rows.
	d := openTestDBAt(t, path, nil)
	d.Close()

	seen := 0
	for round := range 3 {
		t.Run(fmt.Sprintf("kill %d", round+1), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$", "-test.count=1", "-test.timeout=60s")
			cmd.Env = append(os.Environ(), helperWriterEnv+"="+path)
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatalf("start child: %v", err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() {
				cmd.Process.Kill()
				<-exited
			})

			// Watch from a separate handle until the child has committed
			// a good number of new rows, then kill it mid-stream.
			watcher := openTestDBAt(t, path, nil)
			want := seen + 25
			var n int
			deadline := time.Now().Add(30 * time.Second)
			for {
				n = countRows(t, watcher, "api_tokens", "")
				if n >= want {
					break
				}
				select {
				case err := <-exited:
					exited <- err
					t.Fatalf("child exited early (%v) with %d rows; output:\n%s", err, n, out.String())
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("rows after 30s: got %d; want at least %d; child output:\n%s", n, want, out.String())
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatalf("SIGKILL: %v", err)
			}
			err := <-exited
			exited <- err
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("child exit: got %v; want death by SIGKILL", err)
			}
			if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("child exit: got %v; want death by SIGKILL; output:\n%s", err, out.String())
			}
			watcher.Close()

			if err := db.CheckIntegrity(ctx, path); err != nil {
				t.Fatalf("CheckIntegrity after SIGKILL: %v", err)
			}
			after, err := db.Open(ctx, path, nil)
			if err != nil {
				t.Fatalf("Open after SIGKILL: %v", err)
			}
			defer after.Close()
			if err := after.Ping(ctx); err != nil {
				t.Errorf("Ping after SIGKILL: %v", err)
			}

			tokens := countRows(t, after, "api_tokens", "")
			if tokens < n {
				t.Errorf("api_tokens after SIGKILL: got %d; want at least the %d seen committed", tokens, n)
			}
			// Each token was minted in one transaction with its audit row:
			// a kill can lose a whole transaction, never half of one.
			if audits := countRows(t, after, "audit_log", "action = 'token.create'"); audits != tokens {
				t.Errorf("token.create audit rows: got %d; want %d (one per token)", audits, tokens)
			}
			if torn := countRows(t, after, "meta", "key LIKE 'child.%' AND length(value) <> ?", helperValueSize); torn != 0 {
				t.Errorf("settings of the wrong length: got %d; want 0", torn)
			}
			var fkViolations int
			if err := after.Readers().GetContext(ctx, &fkViolations, `SELECT count(*) FROM pragma_foreign_key_check`); err != nil {
				t.Fatalf("foreign_key_check: %v", err)
			}
			if fkViolations != 0 {
				t.Errorf("foreign key violations: got %d; want 0", fkViolations)
			}
			seen = tokens
		})
		if t.Failed() {
			return
		}
	}
}
