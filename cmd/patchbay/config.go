package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"time"
)

// Config is every setting. Each is a flag with a PATCHBAY_* environment
// twin; the flag wins when both are given. README.md has the table.
type Config struct {
	Addr             string
	DataDir          string
	BaseURL          string
	OIDCIssuer       string
	OIDCClientID     string
	OIDCClientSecret string
	AdminEmails      string
	SecretKeyFile    string
	LogLevel         string
	LogFormat        string
	DevIDP           bool
	TrustedProxies   string
	SessionIdle      time.Duration
	SessionMaxAge    time.Duration
	ShutdownTimeout  time.Duration
	ConnectorIdle    time.Duration
	Sandbox          string
}

// bindFlags declares the shared settings on fs.
func (c *Config) bindFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Addr, "addr", "127.0.0.1:8080", "address to listen on")
	fs.StringVar(&c.DataDir, "data-dir", "./data", "directory for the database, secret key and connector files")
	fs.StringVar(&c.BaseURL, "base-url", "", "public URL of Patchbay (default: http://<addr>)")
	fs.StringVar(&c.OIDCIssuer, "oidc-issuer", "", "OpenID Provider issuer URL (empty: built-in development sign-in)")
	fs.StringVar(&c.OIDCClientID, "oidc-client-id", "", "OIDC client id")
	fs.StringVar(&c.OIDCClientSecret, "oidc-client-secret", "", "OIDC client secret")
	fs.StringVar(&c.AdminEmails, "admin-emails", "", "comma-separated emails that get the admin role at first sign-in")
	fs.StringVar(&c.SecretKeyFile, "secret-key-file", "", "file holding the secret-sealing key (default: <data-dir>/secret.key)")
	fs.StringVar(&c.LogLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&c.LogFormat, "log-format", "text", "text or json")
	fs.BoolVar(&c.DevIDP, "dev-idp", false, "allow the development sign-in on a non-loopback address")
	fs.StringVar(&c.TrustedProxies, "trusted-proxies", "", "comma-separated CIDRs whose X-Forwarded-For is trusted")
	fs.DurationVar(&c.SessionIdle, "session-idle", 12*time.Hour, "sign out after this long without a request")
	fs.DurationVar(&c.SessionMaxAge, "session-max-age", 7*24*time.Hour, "sign out this long after sign-in")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 15*time.Second, "how long a graceful shutdown may take")
	fs.DurationVar(&c.ConnectorIdle, "connector-idle", 30*time.Minute, "stop a user's own connectors after this long unused")
	fs.StringVar(&c.Sandbox, "sandbox", "none", "run local connectors under: none (own process group and PID namespace) or bwrap (bubblewrap: only their own directory)")
}

// envName is a flag's environment twin: --oidc-issuer is PATCHBAY_OIDC_ISSUER.
func envName(flagName string) string {
	return "PATCHBAY_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseFlags parses args, then fills every flag not given on the command
// line from its environment twin. Bad values in either are errors.
func parseFlags(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			// The usage text promises the flags for -h; say them.
			var b strings.Builder
			fs.SetOutput(&b)
			fs.PrintDefaults()
			return usageError{fmt.Errorf("flags of %s (each flag --x-y has the environment twin PATCHBAY_X_Y):\n%s", fs.Name(), b.String())}
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	shared := sharedFlagNames()
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		// Only the shared settings have environment twins: a stray
		// PATCHBAY_EMAIL must not change what `token create` does.
		if given[f.Name] || !shared[f.Name] {
			return
		}
		if v := getenv(envName(f.Name)); v != "" {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, usageError{fmt.Errorf("invalid value %q for %s: %v", v, envName(f.Name), err)})
			}
		}
	})
	return errors.Join(errs...)
}

// sharedFlagNames are the settings every command shares.
func sharedFlagNames() map[string]bool {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	new(Config).bindFlags(fs)
	names := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { names[f.Name] = true })
	return names
}

// validate checks the values that flag parsing cannot.
func (c *Config) validate() error {
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return usageError{fmt.Errorf("--addr %q: %v", c.Addr, err)}
	}
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usageError{fmt.Errorf("--base-url %q must be an absolute http(s) URL", c.BaseURL)}
		}
	}
	if c.OIDCIssuer != "" && (c.OIDCClientID == "" || c.OIDCClientSecret == "") {
		return usageError{errors.New("--oidc-issuer needs --oidc-client-id and --oidc-client-secret")}
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return usageError{fmt.Errorf("--log-level %q: want debug, info, warn or error", c.LogLevel)}
	}
	switch c.LogFormat {
	case "text", "json":
	default:
		return usageError{fmt.Errorf("--log-format %q: want text or json", c.LogFormat)}
	}
	if _, err := c.trustedProxies(); err != nil {
		return err
	}
	if c.Sandbox != "none" && c.Sandbox != "bwrap" {
		return usageError{fmt.Errorf("--sandbox %q: want none or bwrap", c.Sandbox)}
	}
	if c.SessionIdle <= 0 || c.SessionMaxAge <= 0 || c.ShutdownTimeout <= 0 || c.ConnectorIdle <= 0 {
		return usageError{errors.New("durations must be positive")}
	}
	return nil
}

func (c *Config) trustedProxies() ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, s := range splitList(c.TrustedProxies) {
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			return nil, usageError{fmt.Errorf("--trusted-proxies: %q is not a CIDR", s)}
		}
		out = append(out, n)
	}
	return out, nil
}

func (c *Config) dbPath() string { return filepath.Join(c.DataDir, "patchbay.db") }

func (c *Config) keyFile() string {
	if c.SecretKeyFile != "" {
		return c.SecretKeyFile
	}
	return filepath.Join(c.DataDir, "secret.key")
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// usageError marks errors caused by how Patchbay was invoked; they exit 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }
