package main

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"patchbay/migrations"
)

func TestHealthAndReadinessAnswer200(t *testing.T) {
	pb := startPatchbay(t, nil)
	for _, tc := range []struct{ path, body string }{
		{"/healthz", "ok\n"},
		{"/readyz", "ready\n"},
	} {
		resp, body := get(t, pb.URL+tc.path)
		if resp.StatusCode != http.StatusOK || body != tc.body {
			t.Errorf("GET %s: got %d %q; want 200 %q", tc.path, resp.StatusCode, body, tc.body)
		}
	}
}

func TestVersionPrintsTheBuildVersion(t *testing.T) {
	out := mustRunPatchbay(t, nil, "version")
	if want := "patchbay " + version + "\n"; out != want {
		t.Errorf("patchbay version printed %q; want %q", out, want)
	}
}

func TestHelpListsEveryCommand(t *testing.T) {
	out := mustRunPatchbay(t, nil, "help")
	for _, cmd := range []string{"serve", "migrate", "version", "user add", "token create", "rotate-key", "backup"} {
		if !strings.Contains(out, cmd) {
			t.Errorf("patchbay help does not mention %q; got:\n%s", cmd, out)
		}
	}
}

// TestMisuseIsAUsageError covers the exit-2 path of main: every mistake in
// how Patchbay is invoked is a usageError whose message names the mistake,
// and serve reports it before it touches the data directory.
func TestMisuseIsAUsageError(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want []string // substrings of the message
	}{
		{name: "unknown flag", args: []string{"serve", "--bogus"}, want: []string{"-bogus", "not defined"}},
		{name: "unknown flag without a command means serve", args: []string{"--bogus"}, want: []string{"-bogus", "not defined"}},
		{name: "unknown log format", args: []string{"serve", "--log-format", "xml"}, want: []string{"--log-format", `"xml"`, "text or json"}},
		{name: "unknown log level in the environment", env: map[string]string{"PATCHBAY_LOG_LEVEL": "loud"}, args: []string{"serve"}, want: []string{"log-level", `"loud"`}},
		{name: "unparsable duration in the environment", env: map[string]string{"PATCHBAY_SHUTDOWN_TIMEOUT": "soon"}, args: []string{"serve"}, want: []string{"PATCHBAY_SHUTDOWN_TIMEOUT", `"soon"`}},
		{name: "unknown command", args: []string{"frobnicate"}, want: []string{`unknown command "frobnicate"`, "Usage:"}},
		{name: "unknown subcommand", args: []string{"token", "list"}, want: []string{`unknown command "token list"`}},
		{name: "stray argument", args: []string{"serve", "extra"}, want: []string{`unexpected argument "extra"`}},
		{name: "issuer without client credentials", args: []string{"serve", "--oidc-issuer", "http://127.0.0.1:1"}, want: []string{"--oidc-client-id", "--oidc-client-secret"}},
		{name: "trusted proxy that is not a CIDR", args: []string{"serve", "--trusted-proxies", "10.0.0.1"}, want: []string{"--trusted-proxies", `"10.0.0.1"`}},
		{name: "user add without an email", args: []string{"user", "add", "--role", "support"}, want: []string{"--email is required"}},
		{name: "token create without a name", args: []string{"token", "create", "--email", "x@example.test"}, want: []string{"--email and --name are required"}},
		{name: "backup without a destination", args: []string{"backup"}, want: []string{"--to is required"}},
		{name: "help flag lists the flags and their environment twins", args: []string{"serve", "-h"}, want: []string{"-addr", "-oidc-issuer", "PATCHBAY_"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := filepath.Join(t.TempDir(), "data")
			args := append(slices.Clone(tc.args), "--data-dir", dataDir)
			out, err := runPatchbay(t, tc.env, args...)
			var ue usageError
			if !errors.As(err, &ue) {
				t.Fatalf("patchbay %s: got error %v (stdout %q); want a usageError", strings.Join(args, " "), err, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message %q does not contain %q", err, w)
				}
			}
			if _, err := os.Stat(dataDir); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("data dir after a usage error: got stat error %v; want it not created", err)
			}
		})
	}
}

// TestSettingsComeFromFlagsOrTheirEnvironmentTwins checks that a
// PATCHBAY_* variable sets what its flag sets, and that the flag wins
// when both are given.
func TestSettingsComeFromFlagsOrTheirEnvironmentTwins(t *testing.T) {
	t.Run("PATCHBAY_ADDR sets the address", func(t *testing.T) {
		pb := startPatchbay(t, map[string]string{"PATCHBAY_ADDR": "127.0.0.1:0"})
		host, port, _ := net.SplitHostPort(hostPort(t, pb.URL))
		// Without the variable, serve would listen on its default, 8080.
		if host != "127.0.0.1" || port == "8080" || port == "0" {
			t.Errorf("listening on %s; want 127.0.0.1 with a kernel-chosen port", pb.URL)
		}
	})
	t.Run("--addr beats PATCHBAY_ADDR", func(t *testing.T) {
		// Hold the address the variable names, so that serve can only
		// start if it listens where the flag says.
		busy, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer busy.Close()
		pb := startPatchbay(t, map[string]string{"PATCHBAY_ADDR": busy.Addr().String()}, "--addr", "127.0.0.1:0")
		if got := hostPort(t, pb.URL); got == busy.Addr().String() {
			t.Errorf("listening on %s, the address of PATCHBAY_ADDR; want the --addr one", got)
		}
	})
	t.Run("PATCHBAY_DATA_DIR sets the data directory", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "from-env")
		pb := startPatchbay(t, map[string]string{"PATCHBAY_DATA_DIR": dir})
		if _, err := os.Stat(filepath.Join(dir, "patchbay.db")); err != nil {
			t.Errorf("database in PATCHBAY_DATA_DIR: %v; want it created there", err)
		}
		pb.stop(t)
	})
	t.Run("PATCHBAY_LOG_FORMAT=json gives JSON logs", func(t *testing.T) {
		pb := startPatchbay(t, map[string]string{"PATCHBAY_LOG_FORMAT": "json"})
		waitForLog(t, pb.logs, "listening", startTimeout)
		line := firstLogLine(t, pb.logs.String(), "listening")
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("log line %q is not JSON: %v", line, err)
		}
	})
	t.Run("--log-format text beats PATCHBAY_LOG_FORMAT=json", func(t *testing.T) {
		pb := startPatchbay(t, map[string]string{"PATCHBAY_LOG_FORMAT": "json"}, "--log-format", "text")
		waitForLog(t, pb.logs, "listening", startTimeout)
		line := firstLogLine(t, pb.logs.String(), "listening")
		if !strings.Contains(line, "msg=listening") {
			t.Errorf("log line %q; want text format (msg=listening)", line)
		}
	})
	t.Run("an invalid flag is reported even when its twin is valid", func(t *testing.T) {
		_, err := tryStartPatchbay(t, map[string]string{"PATCHBAY_LOG_FORMAT": "json"}, "--log-format", "yaml")
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), `"yaml"`) {
			t.Errorf("got %v; want a usageError about \"yaml\"", err)
		}
	})
}

func firstLogLine(t *testing.T, logs, containing string) string {
	t.Helper()
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, containing) {
			return line
		}
	}
	t.Fatalf("no log line contains %q; logs:\n%s", containing, logs)
	return ""
}

// TestDevelopmentSignInStaysOnLoopbackUnlessInsistedOn: the built-in
// development sign-in lets anyone sign in as anyone, so serve refuses it on
// a non-loopback address unless --dev-idp (or PATCHBAY_DEV_IDP) insists. A
// real issuer may listen anywhere.
func TestDevelopmentSignInStaysOnLoopbackUnlessInsistedOn(t *testing.T) {
	t.Run("refused on 0.0.0.0 without --dev-idp", func(t *testing.T) {
		dataDir := filepath.Join(t.TempDir(), "data")
		_, err := tryStartPatchbay(t, nil, "--addr", "0.0.0.0:0", "--data-dir", dataDir)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Fatalf("got %v; want a usageError", err)
		}
		for _, w := range []string{"0.0.0.0:0", "--dev-idp", "--oidc-issuer"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("message %q does not mention %s", err, w)
			}
		}
		if _, err := os.Stat(dataDir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("data dir after refusing: got stat error %v; want it not created", err)
		}
	})
	t.Run("refused when --dev-idp=false beats PATCHBAY_DEV_IDP=true", func(t *testing.T) {
		_, err := tryStartPatchbay(t, map[string]string{"PATCHBAY_DEV_IDP": "true"}, "--addr", "0.0.0.0:0", "--dev-idp=false")
		var ue usageError
		if !errors.As(err, &ue) {
			t.Fatalf("got %v; want a usageError", err)
		}
	})
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"allowed with --dev-idp", nil, []string{"--addr", "0.0.0.0:0", "--dev-idp"}},
		{"allowed with PATCHBAY_DEV_IDP=true", map[string]string{"PATCHBAY_DEV_IDP": "true"}, []string{"--addr", "0.0.0.0:0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pb := startPatchbay(t, tc.env, tc.args...)
			_, port, _ := net.SplitHostPort(hostPort(t, pb.URL))
			resp, body := get(t, "http://127.0.0.1:"+port+"/signin")
			if resp.StatusCode != http.StatusOK || !strings.Contains(body, `data-testid="sign-in-dev-note"`) {
				t.Errorf("GET /signin: got %d without the development note; want 200 with it", resp.StatusCode)
			}
			waitForLog(t, pb.logs, "development sign-in is on", startTimeout)
		})
	}
	t.Run("a real issuer may listen on 0.0.0.0", func(t *testing.T) {
		pb := startPatchbay(t, map[string]string{"PATCHBAY_OIDC_CLIENT_SECRET": "s3cret"},
			"--addr", "0.0.0.0:0", "--oidc-issuer", "http://127.0.0.1:1", "--oidc-client-id", "patchbay")
		_, port, _ := net.SplitHostPort(hostPort(t, pb.URL))
		resp, body := get(t, "http://127.0.0.1:"+port+"/signin")
		if resp.StatusCode != http.StatusOK || strings.Contains(body, "sign-in-dev-note") || strings.Contains(body, "dev-banner") {
			t.Errorf("GET /signin: got %d, development sign-in shown: %v; want 200 without it", resp.StatusCode, strings.Contains(body, "dev-"))
		}
		if resp, _ := get(t, "http://127.0.0.1:"+port+"/dev-idp/.well-known/openid-configuration"); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET /dev-idp discovery with a real issuer: got %d; want 404", resp.StatusCode)
		}
	})
}

func TestMigratePrintsTheSchemaVersion(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	want := "database " + filepath.Join(dataDir, "patchbay.db") + " is at schema version " + strconv.FormatInt(newestMigration(t), 10) + "\n"
	for _, run := range []string{"first run applies the migrations", "second run finds nothing to do"} {
		if got := mustRunPatchbay(t, nil, "migrate", "--data-dir", dataDir); got != want {
			t.Errorf("%s: printed %q; want %q", run, got, want)
		}
	}
}

// newestMigration is the highest NNNNN prefix among the embedded migrations.
func newestMigration(t *testing.T) int64 {
	t.Helper()
	names, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil || len(names) == 0 {
		t.Fatalf("listing migrations: %v (%d files)", err, len(names))
	}
	var newest int64
	for _, n := range names {
		num, _, _ := strings.Cut(n, "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			t.Fatalf("migration %s has no number prefix", n)
		}
		newest = max(newest, v)
	}
	return newest
}

// TestCommandLineTokenAuthenticatesTheAPI: a person added and given a token
// on the command line can call the API of a served Patchbay with it, with
// the capabilities of the role they were given.
func TestCommandLineTokenAuthenticatesTheAPI(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	out := mustRunPatchbay(t, nil, "user", "add", "--data-dir", dataDir, "--email", "x@example.test", "--role", "support")
	if !strings.Contains(out, "x@example.test") || !strings.Contains(out, "role support") {
		t.Errorf("user add printed %q; want the email and role support", out)
	}
	out = mustRunPatchbay(t, nil, "token", "create", "--data-dir", dataDir, "--email", "x@example.test", "--name", "ci")
	token := strings.TrimSpace(out)
	if !strings.HasPrefix(token, "pbt_") || strings.Count(out, "\n") != 1 {
		t.Fatalf("token create printed %q; want one line with a pbt_ token", out)
	}

	pb := startPatchbay(t, nil, "--data-dir", dataDir)
	status, me := getMe(t, pb.URL, "Authorization: Bearer "+token)
	if status != http.StatusOK {
		t.Fatalf("GET /api/me with the token: got %d; want 200", status)
	}
	if me.Email != "x@example.test" || me.Role != "support" || me.Via != "token" {
		t.Errorf("GET /api/me: got email %q role %q via %q; want x@example.test, support, token", me.Email, me.Role, me.Via)
	}
	if !slices.Contains(me.Capabilities, "mcp.inspect_logins") {
		t.Errorf("capabilities %v; want them to include mcp.inspect_logins", me.Capabilities)
	}
	if slices.Contains(me.Capabilities, "users.manage") {
		t.Errorf("capabilities %v; want no users.manage for support", me.Capabilities)
	}

	t.Run("a wrong token is refused", func(t *testing.T) {
		if status, _ := getMe(t, pb.URL, "Authorization: Bearer pbt_"+strings.Repeat("A", 43)); status != http.StatusUnauthorized {
			t.Errorf("GET /api/me with an unknown token: got %d; want 401", status)
		}
	})
	t.Run("the token never reaches the logs", func(t *testing.T) {
		pb.stop(t)
		if strings.Contains(pb.logs.String(), token) {
			t.Errorf("the logs contain the token")
		}
	})
}

func TestCommandFlagsHaveNoEnvironmentTwins(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	// Only shared settings read PATCHBAY_*; a stray PATCHBAY_EMAIL must not
	// pick whose token is minted.
	_, err := runPatchbay(t, map[string]string{"PATCHBAY_EMAIL": "x@example.test", "PATCHBAY_NAME": "stray"},
		"token", "create", "--data-dir", dataDir)
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--email and --name are required") {
		t.Errorf("token create with only PATCHBAY_EMAIL/PATCHBAY_NAME set: got %v; want the usage error for missing flags", err)
	}
}
