package mcp

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"patchbay"
)

// Manager runs a set of connectors (one runtime: the global one, or one
// user's) and implements Provider over them.
type Manager struct {
	opts Options

	// mu guards only the map; no process is started or stopped under it.
	// Tool calls only read it, in parallel.
	mu       sync.RWMutex
	sessions map[string]*Session
	closed   bool
}

// NewManager returns an empty manager.
func NewManager(opts Options) *Manager {
	return &Manager{opts: opts.withDefaults(), sessions: map[string]*Session{}}
}

// ConnectAll starts every spec in parallel and waits, at most
// ConnectTimeout per server, for each to be ready or failed. A slow or
// broken server never delays the others: each keeps starting (or stays
// failed, visibly) in the background. A spec whose name is already running
// replaces it. The error joins one error per server that is not ready.
func (m *Manager) ConnectAll(ctx context.Context, specs []Spec) error {
	var errs []error
	var started []*Session
	seen := map[string]bool{}
	for _, spec := range specs {
		if err := spec.Validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		if seen[spec.Name] {
			errs = append(errs, &patchbay.Error{Code: patchbay.ECONFLICT, Message: fmt.Sprintf("connector %s listed twice", spec.Name)})
			continue
		}
		seen[spec.Name] = true
		s, err := m.add(spec)
		if err != nil {
			return err
		}
		started = append(started, s)
	}

	results := make([]error, len(started))
	var wg sync.WaitGroup
	for i, s := range started {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wctx, cancel := context.WithTimeout(ctx, m.opts.ConnectTimeout)
			defer cancel()
			st, err := s.waitFor(wctx, func(st State) bool {
				return st.Phase == PhaseReady || st.Phase == PhaseFailed || st.Phase == PhaseStopped
			})
			switch {
			case err != nil:
				results[i] = fmt.Errorf("mcp: %s still %s: %w", s.spec.Name, st.Phase, err)
			case st.Phase != PhaseReady:
				results[i] = fmt.Errorf("mcp: %s %s: %s", s.spec.Name, st.Phase, st.LastError)
			}
		}()
	}
	wg.Wait()
	return errors.Join(append(errs, results...)...)
}

// add starts a session for spec, replacing (and stopping) a running one
// of the same name. The process starts outside the manager's lock.
func (m *Manager) add(spec Spec) (*Session, error) {
	s := newSession(spec, m.opts)
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errors.New("mcp: manager closed")
	}
	old := m.sessions[spec.Name]
	m.sessions[spec.Name] = s
	m.mu.Unlock()
	s.startAfter(old)
	return s, nil
}

// ConnectFirst starts spec like ConnectAll but waits only for its first
// attempt: it returns nil once the connector is ready and the first
// failure otherwise (the session keeps retrying in the background). It
// is for a person waiting on a verdict, such as an activation; ConnectAll,
// for boot, waits out restarts.
func (m *Manager) ConnectFirst(ctx context.Context, spec Spec) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	s, err := m.add(spec)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, m.opts.ConnectTimeout)
	defer cancel()
	st, err := s.waitFor(wctx, func(st State) bool { return st.Phase != PhaseStarting })
	switch {
	case err != nil:
		return fmt.Errorf("mcp: %s still %s: %w", spec.Name, st.Phase, err)
	case st.Phase != PhaseReady:
		return fmt.Errorf("mcp: %s %s: %s", spec.Name, st.Phase, st.LastError)
	}
	return nil
}

// session returns the named session or nil.
func (m *Manager) session(name string) *Session {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.sessions[name]
}

func (m *Manager) snapshot() []*Session {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].spec.Name < out[j].spec.Name })
	return out
}

// States returns every connector's state, sorted by name. Failed and
// stopped connectors stay listed until replaced.
func (m *Manager) States() []State {
	var out []State
	for _, s := range m.snapshot() {
		out = append(out, s.State())
	}
	return out
}

// State returns one connector's state.
func (m *Manager) State(name string) (State, bool) {
	s := m.session(name)
	if s == nil {
		return State{}, false
	}
	return s.State(), true
}

// Stderr returns the kept, redacted stderr of a local connector.
func (m *Manager) Stderr(name string) string {
	if s := m.session(name); s != nil {
		return s.Stderr()
	}
	return ""
}

// Tools returns the tools of every ready connector, namespaced.
func (m *Manager) Tools() []ToolDef { return m.ToolDefs() }

// ToolDefs implements Provider.
func (m *Manager) ToolDefs() []ToolDef {
	var out []ToolDef
	for _, s := range m.snapshot() {
		if s.State().Phase != PhaseReady {
			continue
		}
		for _, t := range s.Tools() {
			out = append(out, ToolDef{Name: ToolName(s.spec.Name, t.Name), Connector: s.spec.Name, Tool: t})
		}
	}
	return out
}

// CallTool implements Provider: name is "<connector>__<tool>".
func (m *Manager) CallTool(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
	connector, tool, ok := SplitToolName(name)
	if !ok {
		return nil, notFound(name)
	}
	s := m.session(connector)
	if s == nil {
		return nil, notFound(name)
	}
	return s.CallTool(ctx, tool, args)
}

// Stop stops one connector and leaves it listed as stopped.
func (m *Manager) Stop(name string) {
	if s := m.session(name); s != nil {
		s.stop()
	}
}

// Close stops every connector and their process groups. It is safe to
// call twice; later ConnectAll calls fail.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range m.snapshot() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.stop()
		}()
	}
	wg.Wait()
	return nil
}

func notFound(name string) error {
	return &patchbay.Error{Code: patchbay.ENOTFOUND, Message: fmt.Sprintf("no tool %q", name)}
}
