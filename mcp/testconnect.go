package mcp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// ErrAuthFailed is wrapped by TestConnect's error when a remote server
// answered 401 or 403.
var ErrAuthFailed = errors.New("auth failed")

// ErrTimeout is wrapped by TestConnect's error when initialize + tools/list
// did not finish in time.
var ErrTimeout = errors.New("timed out")

// TestConnect is the "Test connection" button: it starts spec once,
// initializes it and lists its tools, then stops everything. Nothing is
// kept: a local connector runs in a fresh scratch directory (its Dir and
// HOME), removed afterwards, no Manager or Session is involved, and the
// process group is stopped before TestConnect returns. The tools come back
// namespaced as a Manager would list them.
//
// Its errors are meant for the UI: "command not found: X", "exited with
// code N: <stderr tail>", "timed out after D", or "auth failed: HTTP 401
// from <url>" (wrapping ErrAuthFailed); others are wrapped as they come.
// A nil runner means LocalRunner{}; timeout <= 0 means 30s.
func TestConnect(ctx context.Context, spec Spec, runner Runner, timeout time.Duration) ([]ToolDef, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if spec.local() {
		if strings.Contains(spec.Command, "/") && !filepath.IsAbs(spec.Command) {
			spec.Command = filepath.Join(spec.Dir, spec.Command)
		}
		scratch, err := os.MkdirTemp("", "patchbay-testconnect-")
		if err != nil {
			return nil, err
		}
		// Removed after TestConnectIn has stopped the process.
		defer os.RemoveAll(scratch)
		spec.Dir = scratch
	}
	return TestConnectIn(ctx, spec, runner, timeout)
}

// TestConnectIn is TestConnect for a local connector that is installed in
// a directory the caller owns and removes afterwards (Runtimes.TestConnection
// installs one into a scratch directory): it runs in spec.Dir itself, its
// working directory and HOME, so relative arguments such as server.py and
// dependencies such as .pydeps resolve as they will at launch. Remote specs
// are tested exactly as by TestConnect.
func TestConnectIn(ctx context.Context, spec Spec, runner Runner, timeout time.Duration) ([]ToolDef, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if spec.local() && spec.Dir == "" {
		return nil, fmt.Errorf("connector %s: no directory to run in", spec.Name)
	}
	if runner == nil {
		runner = LocalRunner{}
	}
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	// The transport keeps lifeCtx for its lifetime; cancelling it at the end
	// also ends any stream a remote left open.
	lifeCtx, cancelLife := context.WithCancel(ctx)
	defer cancelLife()
	tctx, cancel := context.WithTimeout(lifeCtx, timeout)
	defer cancel()
	timedOut := func() error { return fmt.Errorf("%w after %s", ErrTimeout, timeout) }

	var (
		cl     *client.Client
		proc   Process
		status lastStatus
	)
	switch spec.Transport {
	case TransportStdio, "":
		var err error
		proc, err = runner.Start(tctx, spec)
		if err != nil {
			if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("command not found: %s", spec.Command)
			}
			return nil, err
		}
		// Stopped before TestConnectIn returns, so before the caller
		// removes the directory.
		defer proc.Stop(500 * time.Millisecond)
		cl = client.NewClient(transport.NewIO(proc.Stdout(), proc.Stdin(), nil), client.WithLegacyProtocolOnly())
	case TransportStreamableHTTP, TransportSSE:
		s := &Session{spec: spec, opts: Options{}.withDefaults()}
		var err error
		if cl, err = remoteClient(spec, s.headers, &status); err != nil {
			return nil, err
		}
	}
	defer cl.Close()

	fail := func(step string, err error) ([]ToolDef, error) {
		if err := status.authFailure(spec.URL); err != nil {
			return nil, err
		}
		if proc != nil {
			// A process that died explains itself better than "transport closed".
			select {
			case <-proc.Done():
				return nil, exitedError(proc)
			case <-time.After(200 * time.Millisecond):
			}
		}
		if tctx.Err() != nil && ctx.Err() == nil {
			return nil, timedOut()
		}
		return nil, fmt.Errorf("%s: %w", step, err)
	}
	if err := cl.Start(lifeCtx); err != nil {
		return fail("start transport", err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "patchbay", Version: "1"}
	if _, err := cl.Initialize(tctx, init); err != nil {
		return fail("initialize", err)
	}
	res, err := cl.ListTools(tctx, mcp.ListToolsRequest{})
	if err != nil {
		return fail("list tools", err)
	}
	out := make([]ToolDef, 0, len(res.Tools))
	for _, t := range res.Tools {
		out = append(out, ToolDef{Name: ToolName(spec.Name, t.Name), Connector: spec.Name, Tool: t})
	}
	return out, nil
}

// exitCoder is implemented by processes that know their exit code.
type exitCoder interface {
	// ExitCode returns the exit code, or -1 if killed by a signal or unknown.
	ExitCode() int
}

// ExitCode implements exitCoder; valid once Done is closed.
func (p *localProcess) ExitCode() int {
	select {
	case <-p.done:
	default:
		return -1
	}
	if p.cmd.ProcessState == nil {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// exitedError describes a process that exited during TestConnect.
func exitedError(p Process) error {
	tail := strings.TrimSpace(p.Stderr())
	if len(tail) > 512 {
		tail = tail[len(tail)-512:]
	}
	what := "exited"
	if ec, ok := p.(exitCoder); ok && ec.ExitCode() >= 0 {
		what = fmt.Sprintf("exited with code %d", ec.ExitCode())
	} else if err := p.ExitErr(); err != nil {
		what = err.Error()
	}
	if tail == "" {
		return errors.New(what)
	}
	return fmt.Errorf("%s: %s", what, tail)
}
