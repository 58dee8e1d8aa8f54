// Package realop runs a real OpenID Provider for Patchbay's sign-in tests.
//
// The provider is node-oidc-provider, started from testdata/oidc-op as a
// subprocess on a free loopback port with one confidential client and one
// test account. Tests drive its login and consent pages with a real browser
// (see the sibling package browser), so the whole authorization code flow
// with PKCE, state and nonce runs as it does in production, with no mock on
// either side.
//
// It is for tests only, but it is a normal package so that tests in several
// packages can share it. testdata/oidc-op/README.md says how CI prepares the
// provider (npm ci).
package realop

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// DirEnv names the environment variable that overrides where the provider's
// directory (testdata/oidc-op) is. Without it the directory is found by
// walking up from the working directory, which works for any test package in
// this module.
const DirEnv = "PATCHBAY_OIDC_OP_DIR"

// The test account and client. They are fixed so that failures are easy to
// reproduce by hand with `node server.mjs`; the client secret alone is random
// per start, so that a test cannot pass with a secret it was not given.
const (
	DefaultClientID = "patchbay-test"
	DefaultUsername = "alice@example.test"
	DefaultPassword = "alice-password"
	DefaultSubject  = "alice"
	DefaultName     = "Alice Example"
)

// startTimeout bounds how long Start waits for the provider to answer. Node
// starts in well under a second; the margin is for a loaded 2-core CI machine.
const startTimeout = 30 * time.Second

// readyPrefix starts the line server.mjs prints on stdout once it listens.
const readyPrefix = "OIDC-OP-READY "

// OP is a running OpenID Provider. Its fields are what a relying party under
// test needs to be configured with, and what a test types into the login page.
type OP struct {
	// Issuer is the provider's issuer URL, e.g. "http://127.0.0.1:40123";
	// discovery is at Issuer + "/.well-known/openid-configuration".
	Issuer string
	// ClientID and ClientSecret identify the one confidential client. It
	// uses client_secret_basic, response type code, and must send PKCE
	// (S256).
	ClientID, ClientSecret string
	// Username and Password sign the test account in.
	Username, Password string
	// Subject, Email and Name are the account's sub, email and name claims
	// (scopes openid, email and profile). Email equals Username.
	Subject, Email, Name string

	proc *process
}

// Start launches the provider for redirectURI, the relying party's exact
// callback URL, which is the client's only registered redirect URI. It waits
// until discovery answers and registers a cleanup that stops the provider
// and everything it started.
//
// When the provider cannot run (see Available), the test is skipped on a
// developer machine and fails in CI.
func Start(t testing.TB, redirectURI string) *OP {
	t.Helper()
	Require(t)
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}

	op := &OP{
		ClientID:     DefaultClientID,
		ClientSecret: randomHex(16),
		Username:     DefaultUsername,
		Password:     DefaultPassword,
		Subject:      DefaultSubject,
		Email:        DefaultUsername,
		Name:         DefaultName,
	}

	cmd := exec.Command("node", "server.mjs",
		"--exit-on-stdin-close",
		"--redirect-uri", redirectURI,
		"--client-id", op.ClientID,
		"--user-login", op.Username,
		"--user-sub", op.Subject,
		"--user-email", op.Email,
		"--user-name", op.Name,
	)
	cmd.Dir = dir
	// Secrets go through the environment, not argv, which ps shows.
	cmd.Env = append(os.Environ(),
		"OP_CLIENT_SECRET="+op.ClientSecret,
		"OP_USER_PASSWORD="+op.Password,
	)

	p, err := startProcess(cmd)
	if err != nil {
		t.Fatalf("realop: starting the provider in %s: %v", dir, err)
	}
	op.proc = p
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("realop: provider output:\n%s", p.log.String())
		}
	})

	deadline := time.Now().Add(startTimeout)
	select {
	case op.Issuer = <-p.issuer:
	case <-p.done:
		t.Fatalf("realop: provider exited before it was ready (%v); output:\n%s", p.err, p.log.String())
	case <-time.After(time.Until(deadline)):
		t.Fatalf("realop: provider not ready after %v; output:\n%s", startTimeout, p.log.String())
	}
	if err := waitDiscovery(op.Issuer, p.done, deadline); err != nil {
		t.Fatalf("realop: %v; output:\n%s", err, p.log.String())
	}
	return op
}

// waitDiscovery polls the discovery document until it names issuer, the
// provider exits, or the deadline passes. The ready line already means the
// port is open, so the first try nearly always succeeds; the poll is there so
// that "listening" is never mistaken for "serving".
func waitDiscovery(issuer string, exited <-chan struct{}, deadline time.Time) error {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	url := issuer + "/.well-known/openid-configuration"
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = checkDiscovery(ctx, url, issuer); last == nil {
			return nil
		}
		select {
		case <-tick.C:
		case <-exited:
			return fmt.Errorf("provider exited while waiting for discovery: %v", last)
		case <-ctx.Done():
			return fmt.Errorf("discovery at %s did not answer in time: %v", url, last)
		}
	}
}

func checkDiscovery(ctx context.Context, url, issuer string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	var doc struct {
		Issuer string `json:"issuer"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	if doc.Issuer != issuer {
		return fmt.Errorf("GET %s: issuer %q, want %q", url, doc.Issuer, issuer)
	}
	return nil
}

// Dir returns the provider's directory, testdata/oidc-op of this module, or
// the directory that $PATCHBAY_OIDC_OP_DIR names.
func Dir() (string, error) {
	if d := os.Getenv(DirEnv); d != "" {
		return filepath.Abs(d)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; {
		cand := filepath.Join(d, "testdata", "oidc-op")
		if _, err := os.Stat(filepath.Join(cand, "server.mjs")); err == nil {
			return cand, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("realop: no testdata/oidc-op/server.mjs in %s or above it; set %s", wd, DirEnv)
		}
		d = parent
	}
}

// minNodeMajor is the oldest Node.js that the pinned oidc-provider runs on.
// (It prints a warning below Node 22 but works on 20, which the machine image
// ships.)
const minNodeMajor = 20

// Available reports whether the provider can run: node (at least version 20)
// is on PATH and `npm ci` has installed oidc-provider in the provider's
// directory. It returns nil when it can, and otherwise an error that says
// what to install.
func Available() error {
	node, err := exec.LookPath("node")
	if err != nil {
		return fmt.Errorf("realop: node is not on PATH (install Node.js %d or later): %w", minNodeMajor, err)
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		return fmt.Errorf("realop: %s --version: %w", node, err)
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
	major, _, _ := strings.Cut(v, ".")
	if n, err := strconv.Atoi(major); err != nil || n < minNodeMajor {
		return fmt.Errorf("realop: node %s is too old, need %d or later", v, minNodeMajor)
	}
	dir, err := Dir()
	if err != nil {
		return err
	}
	return ensureInstalled(dir)
}

// Require skips the test when the provider cannot run on a developer
// machine, and fails it in CI (CI is set), where a skip would hide that the
// sign-in tests never ran.
func Require(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv("CI") == "" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b)
}

// process is the provider's node process.
type process struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser // held open: node exits when it closes (see stop)
	log   *syncBuffer    // stdout and stderr, for failure reports

	issuer chan string   // receives the issuer from the ready line, once
	done   chan struct{} // closed when the process has exited
	err    error         // from Wait; valid after done is closed

	stopOnce sync.Once
}

func startProcess(cmd *exec.Cmd) (*process, error) {
	p := &process{
		cmd:    cmd,
		log:    &syncBuffer{},
		issuer: make(chan string, 1),
		done:   make(chan struct{}),
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	p.stdin = stdin
	cmd.Stdout = &readyWriter{log: p.log, issuer: p.issuer}
	cmd.Stderr = p.log
	// If the process lingers after being killed (it should not), Wait
	// still returns instead of waiting for its output pipes forever.
	cmd.WaitDelay = 5 * time.Second
	setProcAttr(cmd)

	started := make(chan error, 1)
	go func() {
		// Pdeathsig (see setProcAttr) fires when the thread that started
		// the child exits, not the process, so this goroutine keeps its
		// thread until the child is gone. See go.dev/issue/27505.
		lockThread()
		defer unlockThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// stop ends the provider's whole process group, so that nothing node might
// have started outlives the test. SIGTERM (and the closed stdin) make node
// exit at once; SIGKILL follows only if it has not exited after a few
// seconds. The group is not signalled once node is known to be reaped,
// because its process group id may then belong to someone else.
func (p *process) stop() {
	p.stopOnce.Do(func() {
		p.stdin.Close()
		select {
		case <-p.done:
			return // exited on its own earlier; its group id may be reused
		default:
		}
		signalGroup(p.cmd, false)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			signalGroup(p.cmd, true)
			<-p.done
		}
	})
}

// readyWriter passes node's stdout to the log and sends the issuer of the
// first ready line.
type readyWriter struct {
	log     *syncBuffer
	issuer  chan<- string
	partial []byte
	sent    bool
}

func (w *readyWriter) Write(b []byte) (int, error) {
	w.log.Write(b)
	w.partial = append(w.partial, b...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(b), nil
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		if rest, ok := strings.CutPrefix(line, readyPrefix); ok && !w.sent {
			var ready struct {
				Issuer string `json:"issuer"`
			}
			if err := json.Unmarshal([]byte(rest), &ready); err == nil && ready.Issuer != "" {
				w.sent = true
				w.issuer <- ready.Issuer
			}
		}
	}
}

// syncBuffer is a bytes.Buffer that the stdout and stderr copiers can write
// concurrently.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
