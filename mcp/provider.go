package mcp

import (
	"context"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// ToolSep joins a connector's name and its tool's name.
const ToolSep = "__"

// ToolName namespaces a tool by its connector, so two connectors that both
// expose "search" give "a__search" and "b__search".
func ToolName(connector, tool string) string { return connector + ToolSep + tool }

// SplitToolName undoes ToolName. Connector names never contain "__", so
// the first separator is the boundary.
func SplitToolName(name string) (connector, tool string, ok bool) {
	connector, tool, ok = strings.Cut(name, ToolSep)
	return connector, tool, ok && connector != "" && tool != ""
}

// ToolDef is one tool as the session code sees it.
type ToolDef struct {
	// Name is the namespaced name to call it by.
	Name string
	// Connector is the connector that serves it.
	Connector string
	// Tool is the server's own definition, with its own (bare) name.
	Tool mcp.Tool
}

// Provider is what the session code talks to. It never says which runtime
// (global or per-user) serves a tool.
type Provider interface {
	// ToolDefs lists the tools of every ready connector, namespaced.
	ToolDefs() []ToolDef
	// CallTool calls a namespaced tool. It returns a patchbay.Error with
	// code not_found for a tool the caller cannot see, an error wrapping
	// ErrNotReady while its connector is not ready, and ctx's error when
	// ctx ends first. A tool's own failure is a result with IsError set.
	CallTool(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error)
	// States lists the visible connectors' states.
	States() []State
}

var (
	_ Provider = (*Manager)(nil)
	_ Provider = (*UserView)(nil)
)

// UserView is one user's tools: the globals they were granted plus their
// own connectors. If a user connector has the same name as a granted
// global, the global wins and the user's is hidden, so a name always means
// one connector.
type UserView struct {
	global  Provider
	granted map[string]bool
	user    Provider
}

// NewUserView returns global ∪ user, where only the granted global
// connectors are visible. granted is a snapshot taken now; later changes
// to it do not affect the view.
func NewUserView(global Provider, granted []string, user Provider) *UserView {
	g := make(map[string]bool, len(granted))
	for _, n := range granted {
		g[n] = true
	}
	return &UserView{global: global, granted: g, user: user}
}

// ToolDefs implements Provider.
func (v *UserView) ToolDefs() []ToolDef {
	var out []ToolDef
	if v.global != nil {
		for _, d := range v.global.ToolDefs() {
			if v.granted[d.Connector] {
				out = append(out, d)
			}
		}
	}
	if v.user != nil {
		for _, d := range v.user.ToolDefs() {
			if !v.granted[d.Connector] {
				out = append(out, d)
			}
		}
	}
	return out
}

// CallTool implements Provider.
func (v *UserView) CallTool(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
	connector, _, ok := SplitToolName(name)
	if !ok {
		return nil, notFound(name)
	}
	if v.granted[connector] && v.global != nil {
		return v.global.CallTool(ctx, name, args)
	}
	if v.user != nil && !v.granted[connector] {
		return v.user.CallTool(ctx, name, args)
	}
	return nil, notFound(name)
}

// States implements Provider.
func (v *UserView) States() []State {
	var out []State
	if v.global != nil {
		for _, s := range v.global.States() {
			if v.granted[s.Server] {
				out = append(out, s)
			}
		}
	}
	if v.user != nil {
		for _, s := range v.user.States() {
			if !v.granted[s.Server] {
				out = append(out, s)
			}
		}
	}
	return out
}
