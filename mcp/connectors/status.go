package connectors

import (
	"context"
	"time"

	"patchbay"
	"patchbay/db"
	pbmcp "patchbay/mcp"
)

// Phases a Status shows beyond the manager's own.
const (
	PhaseInstalling = "installing"
	PhaseDisabled   = "disabled"
	PhaseNotRunning = "not running"
)

// Status is what a page shows about one connector: its row, its runtime
// state and its latest install, and nothing secret.
type Status struct {
	Name      string
	Title     string
	Scope     string // db.InstallScopeGlobal or db.InstallScopeUser
	ID        int64  // the global server's or the activation's row id
	Kind      string
	Transport string
	Enabled   bool
	Phase     string
	Attempt   int
	LastError string
	Since     time.Time
	PID       int
	Tools     []string
	// HasSecrets says whether a secret or credential is stored.
	HasSecrets bool
	// InstallRunID is the latest install run (0 if none); InstallStatus
	// its status.
	InstallRunID  int64
	InstallStatus string
}

// GlobalStatuses lists every global connector, for administrators.
func (r *Runtimes) GlobalStatuses(ctx context.Context) ([]Status, error) {
	gs, err := r.db.GlobalServers(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Status, 0, len(gs))
	for _, g := range gs {
		st := Status{Name: g.Name, Scope: db.InstallScopeGlobal, ID: g.ID, Enabled: g.Enabled, LastError: g.LastError, HasSecrets: g.HasSecrets}
		if e, err := r.db.CatalogEntryByID(ctx, g.CatalogID); err == nil {
			st.Title, st.Kind, st.Transport = e.Title, e.Kind, e.Transport
		}
		r.fill(ctx, &st, r.global, 0)
		out = append(out, st)
	}
	return out, nil
}

// UserStatuses lists a user's own connectors and the global ones granted
// to them. It starts nothing.
func (r *Runtimes) UserStatuses(ctx context.Context, u patchbay.User) ([]Status, error) {
	var out []Status
	granted, err := r.db.GrantedGlobalNames(ctx, u.ID, u.Role)
	if err != nil {
		return nil, err
	}
	isGranted := map[string]bool{}
	for _, name := range granted {
		isGranted[name] = true
		g, err := r.db.GlobalServerByName(ctx, name)
		if err != nil {
			continue
		}
		st := Status{Name: g.Name, Scope: db.InstallScopeGlobal, ID: g.ID, Enabled: g.Enabled}
		if e, err := r.db.CatalogEntryByID(ctx, g.CatalogID); err == nil {
			st.Title, st.Kind, st.Transport = e.Title, e.Kind, e.Transport
		}
		// A user learns whether a shared connector works, not why not:
		// its errors may describe the host.
		r.fill(ctx, &st, r.global, 0)
		st.LastError, st.PID, st.InstallRunID, st.InstallStatus = "", 0, 0, ""
		out = append(out, st)
	}
	rows, err := r.db.UserServers(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	ur := r.users[u.ID]
	r.mu.Unlock()
	for _, row := range rows {
		st := Status{Name: row.Name, Scope: db.InstallScopeUser, ID: row.ID, Kind: row.Kind, Transport: row.Transport,
			Enabled: true, LastError: row.LastError, HasSecrets: row.HasCredential}
		if e, err := r.db.CatalogEntryByID(ctx, row.CatalogID); err == nil {
			st.Title = e.Title
		}
		if isGranted[row.Name] {
			st.LastError = "Hidden by the shared connector of the same name."
		}
		var mgr *pbmcp.Manager
		if ur != nil {
			mgr = ur.mgr
		}
		r.fill(ctx, &st, mgr, u.ID)
		out = append(out, st)
	}
	return out, nil
}

// fill adds runtime state and the latest install to st.
func (r *Runtimes) fill(ctx context.Context, st *Status, mgr *pbmcp.Manager, userID int64) {
	if run, err := r.db.LatestInstallRun(ctx, st.Scope, userID, st.Name); err == nil {
		st.InstallRunID, st.InstallStatus = run.ID, run.Status
	}
	switch {
	case r.runningJobFor(st.Scope, userID, st.Name) != nil:
		st.Phase = PhaseInstalling
	case !st.Enabled:
		st.Phase = PhaseDisabled
	case mgr != nil:
		if s, ok := mgr.State(st.Name); ok {
			st.Phase, st.Attempt, st.Since, st.PID = string(s.Phase), s.Attempt, s.Since, s.PID
			if s.LastError != "" {
				st.LastError = s.LastError
			}
			for _, d := range mgr.ToolDefs() {
				if d.Connector == st.Name {
					st.Tools = append(st.Tools, d.Tool.Name)
				}
			}
			return
		}
		fallthrough
	default:
		st.Phase = PhaseNotRunning
		if st.LastError != "" {
			st.Phase = string(pbmcp.PhaseFailed)
		}
	}
}

// InstallRun returns one install run with its output so far, if p may
// read it: a global connector's runs need the catalog capability; a
// user's are theirs, and support staff may read them. Anyone else gets
// not found, so run ids reveal nothing.
func (r *Runtimes) InstallRun(ctx context.Context, p *patchbay.Principal, id int64) (db.InstallRun, error) {
	// The live job is looked up first: it leaves the map only after its
	// run is stored, so a running run always comes with its output.
	j := r.liveJob(id)
	run, err := r.db.InstallRunByID(ctx, id)
	if err != nil {
		return db.InstallRun{}, err
	}
	allowed := p.Can(patchbay.CapManageCatalog)
	if run.Scope == db.InstallScopeUser {
		allowed = run.UserID == p.User.ID || p.Can(patchbay.CapInspectLogins)
	}
	if !allowed {
		return db.InstallRun{}, patchbay.Errorf(patchbay.ENOTFOUND, "No such install run.")
	}
	if j != nil && run.Status == db.InstallRunning {
		run.Log = j.Log()
	}
	return run, nil
}

// GlobalStderr returns a global connector's kept, redacted stderr, for
// administrators.
func (r *Runtimes) GlobalStderr(p *patchbay.Principal, name string) (string, error) {
	if !p.Can(patchbay.CapManageCatalog) {
		return "", patchbay.Errorf(patchbay.EFORBIDDEN, "Only catalog administrators can read a shared connector's output.")
	}
	return r.global.Stderr(name), nil
}

// UserStderr returns the kept, redacted stderr of one of the user's own
// connectors ("" when it is not running).
func (r *Runtimes) UserStderr(userID int64, name string) string {
	r.mu.Lock()
	ur := r.users[userID]
	r.mu.Unlock()
	if ur == nil {
		return ""
	}
	return ur.mgr.Stderr(name)
}
