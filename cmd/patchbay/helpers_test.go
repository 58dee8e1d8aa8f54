package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// startTimeout bounds how long a Patchbay may take to print its listening
// line. Start-up opens and migrates SQLite and generates the development
// provider's RSA key, well under a second even on a small CI machine.
const startTimeout = 20 * time.Second

// stopTimeout bounds how long a graceful shutdown may take in a test.
const stopTimeout = 20 * time.Second

// pollEvery is how often the tests look again at something they wait for.
const pollEvery = 25 * time.Millisecond

// instance is a Patchbay serving in this test process through run, as
// main would run it.
type instance struct {
	URL     string // from the "listening on" line
	DataDir string
	logs    *syncBuffer // what run wrote to stderr

	cancel   context.CancelFunc
	done     chan struct{} // closed when run has returned
	err      error         // run's result, valid once done is closed
	stopOnce sync.Once
}

// startPatchbay runs `patchbay serve` in-process with args and the
// environment env (and nothing from the real environment) and waits until
// it listens. Unless args or env say otherwise it serves on 127.0.0.1:0 and
// keeps its data in a fresh directory. Cleanup cancels run's context and
// fails the test unless run returns nil, i.e. the shutdown was graceful.
func startPatchbay(t *testing.T, env map[string]string, args ...string) *instance {
	t.Helper()
	pb, err := tryStartPatchbay(t, env, args...)
	if err != nil {
		t.Fatalf("starting patchbay serve %s: %v", strings.Join(args, " "), err)
	}
	return pb
}

// tryStartPatchbay is startPatchbay for tests that expect serve to fail:
// when run returns before listening, its error is returned as it is.
func tryStartPatchbay(t *testing.T, env map[string]string, args ...string) (*instance, error) {
	t.Helper()
	full := []string{"serve"}
	dataDir := flagValue(args, "data-dir")
	if dataDir == "" {
		dataDir = env["PATCHBAY_DATA_DIR"]
	}
	if dataDir == "" {
		dataDir = filepath.Join(t.TempDir(), "data")
		full = append(full, "--data-dir", dataDir)
	}
	if flagValue(args, "addr") == "" && env["PATCHBAY_ADDR"] == "" {
		full = append(full, "--addr", "127.0.0.1:0")
	}
	full = append(full, args...)

	ctx, cancel := context.WithCancel(context.Background())
	pb := &instance{DataDir: dataDir, logs: &syncBuffer{}, cancel: cancel, done: make(chan struct{})}
	stdoutR, stdoutW := io.Pipe()
	go func() {
		pb.err = run(ctx, full, envFunc(env), stdoutW, pb.logs)
		stdoutW.Close()
		close(pb.done)
	}()
	urls := make(chan string, 1)
	go func() {
		// Read stdout to the end so that run never blocks writing it.
		sc := bufio.NewScanner(stdoutR)
		for sc.Scan() {
			if u, ok := listeningURL(sc.Text()); ok {
				select {
				case urls <- u:
				default:
				}
			}
		}
	}()

	select {
	case pb.URL = <-urls:
	case <-pb.done:
		cancel()
		return nil, pb.err
	case <-time.After(startTimeout):
		cancel()
		return nil, fmt.Errorf("no listening line after %v; logs:\n%s", startTimeout, pb.logs)
	}
	t.Cleanup(func() { pb.stop(t) })
	return pb, nil
}

// stop shuts Patchbay down as SIGTERM would (by cancelling run's context)
// and fails the test unless run returns nil within stopTimeout. It is safe
// to call more than once.
func (pb *instance) stop(t *testing.T) {
	t.Helper()
	pb.stopOnce.Do(func() {
		pb.cancel()
		select {
		case <-pb.done:
		case <-time.After(stopTimeout):
			t.Errorf("run did not return within %v of cancelling its context; logs:\n%s", stopTimeout, pb.logs)
			return
		}
		if pb.err != nil {
			t.Errorf("run returned %v; want nil (graceful shutdown); logs:\n%s", pb.err, pb.logs)
		}
		if !strings.Contains(pb.logs.String(), "msg=stopped") && !strings.Contains(pb.logs.String(), `"msg":"stopped"`) {
			t.Errorf("logs do not say stopped after shutdown; logs:\n%s", pb.logs)
		}
	})
}

// dbPath is the instance's database file.
func (pb *instance) dbPath() string { return filepath.Join(pb.DataDir, "patchbay.db") }

// listeningURL parses serve's "Patchbay <version> listening on <url>" line.
func listeningURL(line string) (string, bool) {
	if !strings.HasPrefix(line, "Patchbay ") {
		return "", false
	}
	_, u, ok := strings.Cut(line, " listening on ")
	return strings.TrimSpace(u), ok
}

// runPatchbay runs a command that ends by itself (migrate, user add, ...)
// in-process and returns what it printed on stdout.
func runPatchbay(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err := run(ctx, args, envFunc(env), &stdout, &stderr)
	return stdout.String(), err
}

// mustRunPatchbay is runPatchbay for commands that must succeed.
func mustRunPatchbay(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	out, err := runPatchbay(t, env, args...)
	if err != nil {
		t.Fatalf("patchbay %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// envFunc is getenv over env only, so that the environment of whoever runs
// the tests (a PATCHBAY_SECRET_KEY, say) cannot change what they test.
func envFunc(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

// flagValue returns the value args give the flag name ("--name v",
// "-name v", "--name=v"), or "".
func flagValue(args []string, name string) string {
	for i, a := range args {
		a = strings.TrimLeft(a, "-")
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// httpClient does not follow redirects, so tests see where they point.
var httpClient = &http.Client{
	Timeout:       10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// get requests rawURL with the given headers ("Name: value") and returns
// the response with its body read.
func get(t *testing.T, rawURL string, headers ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", rawURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading body: %v", rawURL, err)
	}
	return resp, string(body)
}

// apiMe is what GET /api/me answers.
type apiMe struct {
	Email        string   `json:"email"`
	Name         string   `json:"name"`
	Role         string   `json:"role"`
	Capabilities []string `json:"capabilities"`
	Via          string   `json:"via"`
}

// getMe calls GET /api/me with one credential header and returns the
// status and, for a 200, the decoded answer.
func getMe(t *testing.T, baseURL, header string) (int, apiMe) {
	t.Helper()
	resp, body := get(t, baseURL+"/api/me", header)
	var me apiMe
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal([]byte(body), &me); err != nil {
			t.Fatalf("GET /api/me: decoding %q: %v", body, err)
		}
	}
	return resp.StatusCode, me
}

// hostPort returns the host:port of an http URL.
func hostPort(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("parsing URL %q: %v", rawURL, err)
	}
	return u.Host
}

// freePort returns a loopback port that was free a moment ago. Callers
// must cope with losing a race for it.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// waitForLog polls logs until they contain want.
func waitForLog(t *testing.T, logs *syncBuffer, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(logs.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("logs do not contain %q after %v; logs:\n%s", want, timeout, logs)
		}
		time.Sleep(pollEvery)
	}
}

// syncBuffer is a bytes.Buffer that a server's goroutines may write while
// the test reads it.
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
