//go:build unix

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"patchbay/db"
)

// testVersion is stamped into the test binary, so the listening line shows
// that -ldflags "-X main.version=..." reaches it.
const testVersion = "v0.0.0-e2e"

// binary is the patchbay command, built once for every test that runs it.
var binary struct {
	once      sync.Once
	dir, path string
	err       error
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, dir := range []string{binary.dir, testServers.dir} {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
	os.Exit(code)
}

// patchbayBinary builds the command on first use and returns its path.
func patchbayBinary(t *testing.T) string {
	t.Helper()
	binary.once.Do(func() {
		binary.dir, binary.err = os.MkdirTemp("", "patchbay-e2e-")
		if binary.err != nil {
			return
		}
		binary.path = filepath.Join(binary.dir, "patchbay")
		cmd := exec.Command("go", "build", "-o", binary.path, "-ldflags", "-X main.version="+testVersion, ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			binary.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

// cleanEnv is this process's environment without PATCHBAY_* variables, so
// that the subprocess sees only what a test gives it.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATCHBAY_") {
			env = append(env, kv)
		}
	}
	return env
}

// proc is a patchbay serve subprocess.
type proc struct {
	cmd    *exec.Cmd
	URL    string
	stderr *syncBuffer
	done   chan struct{} // closed once the process has been waited for
}

// startBinary runs `patchbay serve` on 127.0.0.1:0 with dataDir as a
// subprocess and waits for its listening line. Cleanup kills it if a test
// left it running.
func startBinary(t *testing.T, dataDir string, args ...string) *proc {
	t.Helper()
	full := append([]string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir}, args...)
	cmd := exec.Command(patchbayBinary(t), full...)
	cmd.Env = cleanEnv()
	p := &proc{cmd: cmd, stderr: &syncBuffer{}, done: make(chan struct{})}
	urls := make(chan string, 1)
	lines := make(chan string, 1)
	cmd.Stdout = &lineWriter{fn: func(line string) {
		if u, ok := listeningURL(line); ok {
			select {
			case urls <- u:
				lines <- line
			default:
			}
		}
	}}
	cmd.Stderr = p.stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", cmd, err)
	}
	go func() {
		cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
	})
	select {
	case p.URL = <-urls:
	case <-p.done:
		t.Fatalf("patchbay exited before listening (%v); stderr:\n%s", cmd.ProcessState, p.stderr)
	case <-time.After(startTimeout):
		t.Fatalf("patchbay printed no listening line after %v; stderr:\n%s", startTimeout, p.stderr)
	}
	if line, want := <-lines, "Patchbay "+testVersion+" listening on http://127.0.0.1:"; !strings.HasPrefix(line, want) {
		t.Errorf("listening line %q; want it to start with %q", line, want)
	}
	return p
}

// wait waits up to timeout for the process to exit and returns its exit
// code (-1 when a signal ended it).
func (p *proc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("patchbay still running %v after the signal; stderr:\n%s", timeout, p.stderr)
	}
	return p.cmd.ProcessState.ExitCode()
}

// signal sends sig to the process.
func (p *proc) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("sending %v: %v", sig, err)
	}
}

// lineWriter calls fn for each complete line written to it.
type lineWriter struct {
	fn      func(string)
	partial []byte
}

func (w *lineWriter) Write(b []byte) (int, error) {
	w.partial = append(w.partial, b...)
	for {
		i := slices.Index(w.partial, '\n')
		if i < 0 {
			return len(b), nil
		}
		w.fn(string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
}

// addTokenUser adds a person with the user role to dataDir on the command
// line and returns a personal access token for them.
func addTokenUser(t *testing.T, dataDir, email string) string {
	t.Helper()
	mustRunPatchbay(t, nil, "user", "add", "--data-dir", dataDir, "--email", email, "--role", "user")
	return strings.TrimSpace(mustRunPatchbay(t, nil, "token", "create", "--data-dir", dataDir, "--email", email, "--name", "setup"))
}

// tokenNames lists the names of email's tokens in the database of dataDir.
func tokenNames(t *testing.T, dataDir, email string) []string {
	t.Helper()
	ctx := context.Background()
	d, err := db.Open(ctx, filepath.Join(dataDir, "patchbay.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	u, err := d.UserByEmail(ctx, email)
	if err != nil {
		t.Fatal(err)
	}
	toks, err := d.ListAPITokens(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tok := range toks {
		names = append(names, tok.Name)
	}
	return names
}

func TestBinaryExitCodes(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	existing := filepath.Join(t.TempDir(), "existing.db")
	if err := os.WriteFile(existing, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"version succeeds", []string{"version"}, 0, "patchbay " + testVersion + "\n", ""},
		{"an unknown flag is a usage error", []string{"--bogus"}, 2, "", "patchbay: flag provided but not defined: -bogus"},
		{"an unknown command is a usage error", []string{"frobnicate"}, 2, "", `patchbay: unknown command "frobnicate"`},
		{"a failed backup is a runtime error", []string{"backup", "--data-dir", dataDir, "--to", existing}, 1, "", "already exists"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(patchbayBinary(t), tc.args...)
			cmd.Env = cleanEnv()
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exitErr *exec.ExitError
			if err != nil && !errors.As(err, &exitErr) {
				t.Fatal(err)
			}
			if got := cmd.ProcessState.ExitCode(); got != tc.wantCode {
				t.Errorf("exit code: got %d; want %d (stderr %q)", got, tc.wantCode, stderr.String())
			}
			if tc.wantStdout != "" && stdout.String() != tc.wantStdout {
				t.Errorf("stdout: got %q; want %q", stdout.String(), tc.wantStdout)
			}
			if !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr: got %q; want it to contain %q", stderr.String(), tc.wantStderr)
			}
		})
	}
}

// TestSIGTERMDrainsInFlightRequestsAndExitsZero sends SIGTERM while a
// request is inside its handler: Patchbay stops accepting connections,
// finishes that request (its write is committed), exits 0 within
// --shutdown-timeout, and the next start on the same data works.
func TestSIGTERMDrainsInFlightRequestsAndExitsZero(t *testing.T) {
	const shutdownTimeout = 10 * time.Second
	dataDir := filepath.Join(t.TempDir(), "data")
	token := addTokenUser(t, dataDir, "drain@example.test")
	p := startBinary(t, dataDir, "--shutdown-timeout", shutdownTimeout.String())
	addr := hostPort(t, p.URL)
	if resp, _ := get(t, p.URL+"/readyz"); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /readyz: got %d; want 200", resp.StatusCode)
	}

	form := url.Values{"name": {"drained"}}.Encode()
	conn, br := startInFlightRequest(t, addr, token, len(form))

	p.signal(t, syscall.SIGTERM)
	signalled := time.Now()
	waitForLog(t, p.stderr, "shutting down", 10*time.Second)
	waitUntilRefused(t, addr)

	if _, err := io.WriteString(conn, form); err != nil {
		t.Fatalf("sending the body after SIGTERM: %v", err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the drained response: %v; stderr:\n%s", err, p.stderr)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "new-token-secret") {
		t.Errorf("drained request: got %d; want 200 with the new token", resp.StatusCode)
	}

	if code := p.wait(t, shutdownTimeout); code != 0 {
		t.Errorf("exit code after SIGTERM: got %d; want 0; stderr:\n%s", code, p.stderr)
	}
	if elapsed := time.Since(signalled); elapsed > shutdownTimeout {
		t.Errorf("exited %v after SIGTERM; want within --shutdown-timeout %v", elapsed, shutdownTimeout)
	}
	if !strings.Contains(p.stderr.String(), "msg=stopped") {
		t.Errorf("stderr does not log msg=stopped:\n%s", p.stderr)
	}

	t.Run("the next start on the same data works", func(t *testing.T) {
		p2 := startBinary(t, dataDir)
		if status, me := getMe(t, p2.URL, "Authorization: Bearer "+token); status != http.StatusOK || me.Email != "drain@example.test" {
			t.Errorf("GET /api/me after restart: got %d %q; want 200 drain@example.test", status, me.Email)
		}
		p2.signal(t, syscall.SIGTERM)
		if code := p2.wait(t, shutdownTimeout); code != 0 {
			t.Errorf("exit code: got %d; want 0", code)
		}
		if err := db.CheckIntegrity(context.Background(), filepath.Join(dataDir, "patchbay.db")); err != nil {
			t.Error(err)
		}
		if names := tokenNames(t, dataDir, "drain@example.test"); !slices.Contains(names, "drained") {
			t.Errorf("tokens after restart: %v; want the drained request's \"drained\" among them", names)
		}
	})
}

// startInFlightRequest starts a token creation on a new connection and
// returns once it is inside its handler: the request announces a body of
// bodyLen bytes with "Expect: 100-continue", and the server answers
// "100 Continue" only when the handler starts reading the form. The caller
// sends the body (or never does) on the returned connection and reads the
// response from the returned reader.
func startInFlightRequest(t *testing.T, addr, token string, bodyLen int) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(conn, "POST /tokens HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n",
		addr, token, bodyLen)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusContinue {
		t.Fatalf("waiting for 100 Continue: got %v, %v; want 100", resp, err)
	}
	return conn, br
}

// waitUntilRefused polls until nothing accepts connections on addr.
func waitUntilRefused(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("%s still accepts connections after shutdown began", addr)
		}
		time.Sleep(pollEvery)
	}
}

// TestSIGTERMDoesNotWaitPastTheShutdownTimeout: a request whose client
// never sends its body cannot hold Patchbay up past --shutdown-timeout.
// The shutdown was not clean, so the exit code is 1 and the log says why.
func TestSIGTERMDoesNotWaitPastTheShutdownTimeout(t *testing.T) {
	const shutdownTimeout = time.Second
	dataDir := filepath.Join(t.TempDir(), "data")
	token := addTokenUser(t, dataDir, "stuck@example.test")
	p := startBinary(t, dataDir, "--shutdown-timeout", shutdownTimeout.String())
	startInFlightRequest(t, hostPort(t, p.URL), token, 100) // and never send the body

	p.signal(t, syscall.SIGTERM)
	signalled := time.Now()
	code := p.wait(t, shutdownTimeout+5*time.Second)
	elapsed := time.Since(signalled)
	if code != 1 {
		t.Errorf("exit code: got %d; want 1; stderr:\n%s", code, p.stderr)
	}
	if elapsed < shutdownTimeout*9/10 {
		t.Errorf("exited %v after SIGTERM; want it to wait about --shutdown-timeout %v for the client", elapsed, shutdownTimeout)
	}
	if !strings.Contains(p.stderr.String(), "shutdown: context deadline exceeded") {
		t.Errorf("stderr does not say the shutdown deadline passed:\n%s", p.stderr)
	}
}

// TestKill9MidWriteLeavesAConsistentDatabase kills Patchbay with SIGKILL
// while clients are writing. The next start opens the database, it passes
// integrity_check, and every write that was acknowledged is there.
func TestKill9MidWriteLeavesAConsistentDatabase(t *testing.T) {
	const email = "writer@example.test"
	dataDir := filepath.Join(t.TempDir(), "data")
	token := addTokenUser(t, dataDir, email)
	p := startBinary(t, dataDir)

	var (
		mu    sync.Mutex
		acked []string
		wg    sync.WaitGroup
	)
	client := &http.Client{Timeout: 10 * time.Second}
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				name := fmt.Sprintf("w%d-%d", w, i)
				req, _ := http.NewRequest(http.MethodPost, p.URL+"/tokens", strings.NewReader(url.Values{"name": {name}}.Encode()))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				resp, err := client.Do(req)
				if err != nil {
					return // the server is gone
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("POST /tokens %s: got %d; want 200", name, resp.StatusCode)
					return
				}
				mu.Lock()
				acked = append(acked, name)
				mu.Unlock()
			}
		})
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 40 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d writes acknowledged after 20s", n)
		}
		time.Sleep(pollEvery)
	}
	p.signal(t, syscall.SIGKILL)
	if code := p.wait(t, 10*time.Second); code != -1 {
		t.Errorf("exit code after SIGKILL: got %d; want -1 (killed by the signal)", code)
	}
	wg.Wait()

	p2 := startBinary(t, dataDir)
	if resp, _ := get(t, p2.URL+"/readyz"); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /readyz after the crash: got %d; want 200", resp.StatusCode)
	}
	p2.signal(t, syscall.SIGTERM)
	if code := p2.wait(t, 20*time.Second); code != 0 {
		t.Errorf("exit code: got %d; want 0", code)
	}
	if err := db.CheckIntegrity(context.Background(), filepath.Join(dataDir, "patchbay.db")); err != nil {
		t.Errorf("after kill -9: %v", err)
	}
	names := tokenNames(t, dataDir, email)
	for _, name := range acked {
		if !slices.Contains(names, name) {
			t.Errorf("acknowledged token %q is missing after the crash", name)
		}
	}
	t.Logf("%d writes acknowledged before SIGKILL, %d tokens stored", len(acked), len(names))
}
