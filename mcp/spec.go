// Package mcp runs and supervises Patchbay's MCP connectors. It knows
// nothing of HTTP or views: handlers hand it Specs and read back States,
// tool definitions and tool results.
package mcp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"patchbay"
)

// Transport names how Patchbay talks to a connector.
type Transport string

// The transports a Spec may name.
const (
	TransportStdio          Transport = "stdio"
	TransportStreamableHTTP Transport = "streamable-http"
	TransportSSE            Transport = "sse"
)

// BasePath is the PATH a local connector gets unless its manifest declares
// one. It is fixed rather than copied from Patchbay's own environment so
// that nothing about the host process leaks into a connector.
const BasePath = "/usr/local/bin:/usr/bin:/bin"

// Spec is everything needed to connect one MCP server, and the only input
// to connecting. A Spec is built from a database row by the caller; this
// package never reads configuration of its own.
type Spec struct {
	// Name identifies the connector; it prefixes its tool names, so it
	// must match ValidName.
	Name      string
	Transport Transport

	// Stdio: the declared command, run without a shell in Dir.
	Command string
	Args    []string
	// Env is the declared, non-secret environment.
	Env map[string]string
	// Secrets are environment variables holding this connector's own
	// credentials. They reach the process like Env, and their values are
	// redacted from everything Patchbay keeps of its stderr.
	Secrets map[string]string
	// Dir is the connector's own directory: the working directory and HOME.
	Dir string

	// Remote: the server URL, static headers and an optional source for a
	// bearer token, asked on every request so refreshed tokens are used.
	URL         string
	Headers     map[string]string
	TokenSource func(ctx context.Context) (string, error)
}

// ValidName reports whether name can be used as a connector name (see
// patchbay.ValidConnectorName): it never contains the namespace separator
// "__" nor ends in "_", so a namespaced tool name splits unambiguously at
// its first "__".
func ValidName(name string) bool { return patchbay.ValidConnectorName(name) }

// Validate checks that s can be connected.
func (s Spec) Validate() error {
	if !ValidName(s.Name) {
		return &patchbay.Error{Code: patchbay.EINVALID, Message: fmt.Sprintf("invalid connector name %q", s.Name)}
	}
	switch s.Transport {
	case TransportStdio, "":
		if s.Command == "" {
			return &patchbay.Error{Code: patchbay.EINVALID, Message: fmt.Sprintf("connector %s: no command", s.Name)}
		}
	case TransportStreamableHTTP, TransportSSE:
		if s.URL == "" {
			return &patchbay.Error{Code: patchbay.EINVALID, Message: fmt.Sprintf("connector %s: no URL", s.Name)}
		}
	default:
		return &patchbay.Error{Code: patchbay.EINVALID, Message: fmt.Sprintf("connector %s: unknown transport %q", s.Name, s.Transport)}
	}
	return nil
}

// local reports whether the connector is a process Patchbay runs.
func (s Spec) local() bool {
	return s.Transport == TransportStdio || s.Transport == ""
}

// secretValues lists the values that must never appear in what Patchbay
// keeps of the connector's output.
func (s Spec) secretValues() []string {
	var out []string
	for _, v := range s.Secrets {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// BuildStdioEnv returns the environment of a local connector process: the
// declared variables plus a minimal base (PATH, HOME=dir, LANG=C.UTF-8).
// It never starts from os.Environ(), so Patchbay's own keys and other
// connectors' secrets cannot reach the child. HOME always points at the
// connector's directory; a declared PATH or LANG replaces the base one.
func BuildStdioEnv(declared map[string]string, dir string) []string {
	env := map[string]string{"PATH": BasePath, "LANG": "C.UTF-8"}
	for k, v := range declared {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.Contains(v, "\x00") {
			continue
		}
		env[k] = v
	}
	env["HOME"] = dir
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// stdioEnv merges a Spec's declared and secret variables for BuildStdioEnv.
func (s Spec) stdioEnv() []string {
	all := make(map[string]string, len(s.Env)+len(s.Secrets))
	for k, v := range s.Env {
		all[k] = v
	}
	for k, v := range s.Secrets {
		all[k] = v
	}
	return BuildStdioEnv(all, s.Dir)
}

// resolveCommand finds the executable the way the child would: a name with
// a slash is taken relative to dir, a bare name is searched in the child's
// PATH (not Patchbay's).
func resolveCommand(command, dir string, env []string) (string, error) {
	if strings.Contains(command, "/") {
		p := command
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if err := isExecutable(p); err != nil {
			return "", fmt.Errorf("command not found: %s: %w", command, err)
		}
		return p, nil
	}
	path := BasePath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, command)
		if isExecutable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("command not found: %s", command)
}

func isExecutable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", p)
	}
	return nil
}
