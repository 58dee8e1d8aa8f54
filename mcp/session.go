package mcp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Phase is where a connector is in its life.
type Phase string

// The phases a State can show.
const (
	PhaseStarting   Phase = "starting"
	PhaseReady      Phase = "ready"
	PhaseRestarting Phase = "restarting"
	PhaseFailed     Phase = "failed"
	PhaseStopped    Phase = "stopped"
)

// State is what the UI shows about one connector.
type State struct {
	Server string
	Phase  Phase
	// Attempt is the restart attempt (1, 2, …) while restarting, else 0.
	Attempt int
	// LastError is the latest failure, with the tail of the connector's
	// stderr when it crashed; its known secrets are redacted.
	LastError string
	Since     time.Time
	// PID is the local process id while it runs, 0 otherwise.
	PID int
}

// ErrNotReady is returned (wrapped) when a tool is called on a connector
// that is not ready.
var ErrNotReady = errors.New("connector not ready")

// permanentError marks a failure that retrying cannot fix, such as a
// command that does not exist.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// conn is one live connection: a client and, for local connectors, the
// process behind it.
type conn struct {
	client   *client.Client
	proc     Process
	lost     chan struct{}
	lostOnce sync.Once
	lostErr  error
}

func (c *conn) markLost(err error) {
	c.lostOnce.Do(func() {
		c.lostErr = err
		close(c.lost)
	})
}

func (c *conn) close(grace time.Duration) {
	_ = c.client.Close()
	if c.proc != nil {
		_ = c.proc.Stop(grace)
	}
}

// Session supervises one MCP server: it connects, caches the server's
// tools, pings it, and restarts it with backoff when it crashes or hangs.
// A session is owned by a Manager, which starts and stops it.
type Session struct {
	spec    Spec
	opts    Options
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
	refresh chan struct{}

	// cur is the ready connection, nil otherwise. It is atomic so that
	// tool calls, the hot path, take no lock.
	cur atomic.Pointer[conn]

	mu      sync.Mutex
	state   State
	changed chan struct{}
	proc    Process
	tools   []mcp.Tool

	stopOnce sync.Once
}

func newSession(spec Spec, opts Options) *Session {
	ctx, cancel := context.WithCancel(context.Background())
	return &Session{
		spec:    spec,
		opts:    opts,
		ctx:     ctx,
		cancel:  cancel,
		done:    make(chan struct{}),
		refresh: make(chan struct{}, 1),
		changed: make(chan struct{}),
		state:   State{Server: spec.Name, Phase: PhaseStarting, Since: opts.Now()},
	}
}

// start launches the supervising goroutine; the session owns it until stop.
func (s *Session) start() { go s.run() }

// startAfter starts s once old (if any) has stopped. A replaced connector
// must be gone before its successor starts (they share a directory), but
// the wait happens on the successor's goroutine, so replacing many
// connectors at once never serialises their stops and starts.
func (s *Session) startAfter(old *Session) {
	if old == nil {
		s.start()
		return
	}
	go func() {
		old.stop()
		s.run()
	}()
}

// stop ends supervision and the server; safe to call more than once.
func (s *Session) stop() {
	s.stopOnce.Do(func() {
		s.cancel()
		<-s.done
		s.setState(func(st *State) {
			st.Phase, st.Attempt, st.PID = PhaseStopped, 0, 0
		})
	})
}

// State returns the current state.
func (s *Session) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// Tools returns the server's cached tools, as last listed.
func (s *Session) Tools() []mcp.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]mcp.Tool(nil), s.tools...)
}

// Stderr returns the kept, redacted stderr of the latest process.
func (s *Session) Stderr() string {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil {
		return ""
	}
	return p.Stderr()
}

// CallTool calls the server's tool name. It returns when the call
// completes, ctx ends or the per-call timeout passes; a connector that is
// not ready gives an error wrapping ErrNotReady.
func (s *Session) CallTool(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
	c := s.cur.Load()
	if c == nil {
		return nil, fmt.Errorf("mcp: %s is %s: %w", s.spec.Name, s.State().Phase, ErrNotReady)
	}
	// A caller's deadline within CallTimeout already bounds the call; only
	// otherwise is a timer needed.
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > s.opts.CallTimeout {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.opts.CallTimeout)
		defer cancel()
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.client.CallTool(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("mcp: %s: call %s: %w", s.spec.Name, name, ctx.Err())
		}
		return nil, fmt.Errorf("mcp: %s: call %s: %w", s.spec.Name, name, err)
	}
	return res, nil
}

// waitFor blocks until the state satisfies ok or ctx ends.
func (s *Session) waitFor(ctx context.Context, ok func(State) bool) (State, error) {
	for {
		s.mu.Lock()
		st, ch := s.state, s.changed
		s.mu.Unlock()
		if ok(st) {
			return st, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return st, ctx.Err()
		}
	}
}

func (s *Session) setState(f func(*State)) {
	s.mu.Lock()
	f(&s.state)
	s.state.Since = s.opts.Now()
	st := s.state
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	if s.opts.OnStateChange != nil {
		s.opts.OnStateChange(st)
	}
}

func (s *Session) run() {
	defer close(s.done)
	if s.ctx.Err() != nil {
		return // stopped while waiting for its predecessor to stop
	}
	var failures []time.Time
	attempt := 0
	for {
		c, err := s.connect()
		if s.ctx.Err() != nil {
			if c != nil {
				c.close(s.opts.StopGrace)
			}
			return
		}
		// old is the connection that just failed. It is closed only after
		// the state says so: closing can take a while (a stop grace, or
		// mcp-go's DELETE to a hung remote), and the state must not claim
		// "ready" meanwhile.
		var old *conn
		if err == nil {
			upSince := s.opts.Now()
			s.cur.Store(c)
			s.setState(func(st *State) {
				st.Phase, st.Attempt, st.LastError = PhaseReady, 0, ""
				if c.proc != nil {
					st.PID = c.proc.Pid()
				}
			})
			err = s.watch(c)
			s.cur.Store(nil)
			if s.ctx.Err() != nil {
				c.close(s.opts.StopGrace)
				return
			}
			old = c
			if err == nil {
				err = errors.New("connection lost")
			}
			if s.opts.Now().Sub(upSince) >= s.opts.StableAfter {
				attempt, failures = 0, nil
			}
		}
		s.opts.Logger.Warn("mcp: connector failed", "server", s.spec.Name, "err", err)

		now := s.opts.Now()
		failures = append(failures, now)
		for len(failures) > 0 && now.Sub(failures[0]) > s.opts.CrashLoopWindow {
			failures = failures[1:]
		}
		// A crash loop is a local process that keeps dying; a remote
		// server that is down (a redeploy, an outage) is retried at the
		// capped backoff for as long as it takes.
		var perm permanentError
		crashLoop := s.spec.local() && len(failures) >= s.opts.CrashLoopCount
		if errors.As(err, &perm) || crashLoop {
			msg := err.Error()
			if !errors.As(err, &perm) {
				msg = fmt.Sprintf("crash loop: %d failures within %s; last: %s", len(failures), s.opts.CrashLoopWindow, msg)
			}
			s.setState(func(st *State) {
				st.Phase, st.Attempt, st.PID, st.LastError = PhaseFailed, 0, 0, msg
			})
			if old != nil {
				old.close(s.opts.StopGrace)
			}
			return
		}

		attempt++
		s.setState(func(st *State) {
			st.Phase, st.Attempt, st.PID, st.LastError = PhaseRestarting, attempt, 0, err.Error()
		})
		// The backoff runs while the old connection closes.
		t := time.NewTimer(s.opts.backoff(attempt))
		if old != nil {
			old.close(s.opts.StopGrace)
		}
		select {
		case <-t.C:
		case <-s.ctx.Done():
			t.Stop()
			return
		}
	}
}

// connect starts the server, initializes it and lists its tools, all
// within ConnectTimeout.
func (s *Session) connect() (*conn, error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.ConnectTimeout)
	defer cancel()

	c := &conn{lost: make(chan struct{})}
	var status lastStatus
	switch s.spec.Transport {
	case TransportStdio, "":
		proc, err := s.opts.Runner.Start(ctx, s.spec)
		if err != nil {
			return nil, permanentError{err}
		}
		s.mu.Lock()
		s.proc = proc
		s.mu.Unlock()
		c.proc = proc
		go func() {
			<-proc.Done()
			err := proc.ExitErr()
			if err == nil {
				err = fmt.Errorf("%s exited", s.spec.Command)
			}
			c.markLost(err)
		}()
		c.client = client.NewClient(transport.NewIO(proc.Stdout(), proc.Stdin(), nil), client.WithLegacyProtocolOnly())
	case TransportStreamableHTTP, TransportSSE:
		cl, err := remoteClient(s.spec, s.headers, &status)
		if err != nil {
			return nil, permanentError{err}
		}
		c.client = cl
	default:
		return nil, permanentError{fmt.Errorf("unknown transport %q", s.spec.Transport)}
	}
	c.client.OnConnectionLost(func(err error) { c.markLost(fmt.Errorf("connection lost: %w", err)) })
	// The handler runs on the transport's reader goroutine, which must not
	// block or issue requests, so it only signals the watch loop.
	c.client.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == mcp.MethodNotificationToolsListChanged {
			select {
			case s.refresh <- struct{}{}:
			default:
			}
		}
	})

	fail := func(err error) (*conn, error) {
		// Credentials the server refuses will not work on the next try
		// either: the connector fails, saying so, until its settings
		// change (which reconnects it).
		if aerr := status.authFailure(s.spec.URL); aerr != nil {
			c.close(s.opts.StopGrace)
			return nil, permanentError{aerr}
		}
		// A process that died explains itself better than "transport closed".
		if c.proc != nil {
			select {
			case <-c.proc.Done():
				if perr := c.proc.ExitErr(); perr != nil {
					err = perr
				}
			case <-time.After(100 * time.Millisecond):
			}
		}
		c.close(s.opts.StopGrace)
		return nil, err
	}
	// The transport keeps this context for its lifetime, so it is the
	// session's, not the connect timeout's.
	if err := c.client.Start(s.ctx); err != nil {
		return fail(fmt.Errorf("start transport: %w", err))
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "patchbay", Version: "1"}
	if _, err := c.client.Initialize(ctx, init); err != nil {
		return fail(fmt.Errorf("initialize: %w", err))
	}
	tools, err := c.client.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return fail(fmt.Errorf("list tools: %w", err))
	}
	s.mu.Lock()
	s.tools = tools.Tools
	s.mu.Unlock()
	return c, nil
}

func (s *Session) headers(ctx context.Context) map[string]string {
	h := make(map[string]string, len(s.spec.Headers)+1)
	for k, v := range s.spec.Headers {
		h[k] = v
	}
	if s.spec.TokenSource != nil {
		tok, err := s.spec.TokenSource(ctx)
		if err != nil {
			s.opts.Logger.Warn("mcp: token source failed", "server", s.spec.Name, "err", err)
		} else if tok != "" {
			h["Authorization"] = "Bearer " + tok
		}
	}
	return h
}

// watch returns why a ready connection must be replaced: the process
// exited, the transport was lost, or pings failed PingFailures times in a
// row. Pings have their own timeout and run beside tool calls, so a slow
// call never counts against the server.
func (s *Session) watch(c *conn) error {
	tick := time.NewTicker(s.opts.PingInterval)
	defer tick.Stop()
	fails := 0
	for {
		select {
		case <-s.ctx.Done():
			return s.ctx.Err()
		case <-c.lost:
			return c.lostErr
		case <-s.refresh:
			go s.refreshTools(c)
		case <-tick.C:
			ctx, cancel := context.WithTimeout(s.ctx, s.opts.PingTimeout)
			err := c.client.Ping(ctx)
			cancel()
			if err == nil {
				fails = 0
				continue
			}
			fails++
			if fails >= s.opts.PingFailures {
				return fmt.Errorf("not answering ping (%d failed): %w", fails, err)
			}
		}
	}
}

// refreshTools re-lists tools after notifications/tools/list_changed.
func (s *Session) refreshTools(c *conn) {
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.ConnectTimeout)
	defer cancel()
	res, err := c.client.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		s.opts.Logger.Warn("mcp: refresh tools", "server", s.spec.Name, "err", err)
		return
	}
	s.mu.Lock()
	if s.cur.Load() == c {
		s.tools = res.Tools
	}
	s.mu.Unlock()
}
