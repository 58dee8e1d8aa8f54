package connectors

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"patchbay"
	"patchbay/db"
	pbmcp "patchbay/mcp"
)

// userRuntime is one user's own connectors, run by their own manager.
type userRuntime struct {
	userID   int64
	mgr      *pbmcp.Manager
	lastUsed atomic.Int64 // unix nanoseconds
	inflight atomic.Int64 // tool calls running now
	// ready is closed when the first start has finished.
	ready chan struct{}
}

func (u *userRuntime) touch() { u.lastUsed.Store(time.Now().UnixNano()) }

func (u *userRuntime) started() bool {
	select {
	case <-u.ready:
		return true
	default:
		return false
	}
}

func (u *userRuntime) close() { u.mgr.Close() }

// ForUser returns what one user can use right now: the global connectors
// granted to them (a snapshot of the grants, taken now) and their own,
// behind one Provider that never says which runtime serves a tool. Their
// runtime is started, in the background, if it is not running.
func (r *Runtimes) ForUser(ctx context.Context, u patchbay.User) (pbmcp.Provider, error) {
	granted, err := r.db.GrantedGlobalNames(ctx, u.ID, u.Role)
	if err != nil {
		return nil, err
	}
	if _, _, err := r.userRuntime(u.ID); err != nil {
		return nil, err
	}
	return pbmcp.NewUserView(r.global, granted, usedProvider{r: r, userID: u.ID}), nil
}

// WarmUser starts a user's runtime if it is not running; sign-in calls
// it so a user's connectors are up by the time they are needed.
func (r *Runtimes) WarmUser(userID int64) {
	if _, _, err := r.userRuntime(userID); err != nil && !errors.Is(err, errClosed) {
		r.log.Warn("starting a user's connectors", "user", userID, "err", err)
	}
}

// WaitUser waits until the first start of a user's runtime has finished
// (every connector ready or failed) or ctx ends. It does not start one.
func (r *Runtimes) WaitUser(ctx context.Context, userID int64) error {
	r.mu.Lock()
	ur := r.users[userID]
	r.mu.Unlock()
	if ur == nil {
		return nil
	}
	select {
	case <-ur.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// UserRunning reports whether a user's runtime is running.
func (r *Runtimes) UserRunning(userID int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.users[userID] != nil
}

// userRuntime returns a user's runtime, starting it when it is not
// running; created says it was started by this call.
func (r *Runtimes) userRuntime(userID int64) (ur *userRuntime, created bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, false, errClosed
	}
	if ur := r.users[userID]; ur != nil {
		ur.touch()
		return ur, false, nil
	}
	ur = &userRuntime{userID: userID, mgr: pbmcp.NewManager(r.cfg.Manager), ready: make(chan struct{})}
	ur.touch()
	r.users[userID] = ur
	r.goBackgroundLocked(func() {
		defer close(ur.ready)
		if err := r.startUser(r.ctx, ur); err != nil {
			r.log.Warn("user connectors: not all are ready", "user", userID, "err", err)
		}
	})
	return ur, true, nil
}

// startUser is the per-user start path: each activation is brought up
// to date with its source (through prepare) and connected, each on its
// own so one broken connector never holds up the others.
func (r *Runtimes) startUser(ctx context.Context, ur *userRuntime) error {
	rows, err := r.db.UserServers(ctx, ur.userID)
	if err != nil {
		return err
	}
	errs := make([]error, len(rows))
	var wg sync.WaitGroup
	for i, row := range rows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.startUserServer(ctx, ur, row)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (r *Runtimes) startUserServer(ctx context.Context, ur *userRuntime, row db.UserServer) error {
	t := r.userTarget(row.UserID, row.Name)
	unlock, err := r.lockTarget(ctx, t)
	if err != nil {
		return err
	}
	defer unlock()
	// Read again under the lock: a deactivation that ran first has the
	// last word, and an activation that ran first connected it already.
	row, err = r.db.UserServerByID(ctx, row.UserID, row.ID)
	if patchbay.ErrorCode(err) == patchbay.ENOTFOUND {
		return nil
	} else if err != nil {
		return err
	}
	if _, ok := ur.mgr.State(row.Name); ok {
		return nil
	}
	e, cred, err := r.userParts(ctx, row)
	if err != nil {
		r.recordUser(row.ID, "", describe(err, nil))
		return err
	}
	err = r.ensureCurrent(ctx, t, e, row.Config, cred, func(hash, lastError string) { r.recordUser(row.ID, hash, lastError) })
	if err != nil {
		return err
	}
	spec, err := UserSpec(e, row, cred, t.dir)
	if err != nil {
		r.recordUser(row.ID, "", describe(err, cred))
		return err
	}
	return ur.mgr.ConnectAll(ctx, []pbmcp.Spec{spec})
}

// userParts loads what building an activation's spec needs. The
// command comes from the catalog entry, so an activation whose entry was
// removed cannot start.
func (r *Runtimes) userParts(ctx context.Context, row db.UserServer) (db.CatalogEntry, map[string]string, error) {
	if row.CatalogID == 0 {
		return db.CatalogEntry{}, nil, patchbay.Errorf(patchbay.EINVALID, "%s was removed from the catalog; deactivate it.", row.CatalogName)
	}
	e, err := r.db.CatalogEntryByID(ctx, row.CatalogID)
	if err != nil {
		return db.CatalogEntry{}, nil, err
	}
	cred, err := r.db.UserServerCredential(ctx, row.UserID, row.ID)
	if err != nil {
		return db.CatalogEntry{}, nil, err
	}
	return e, cred, nil
}

func (r *Runtimes) userTarget(userID int64, name string) target {
	return target{scope: db.InstallScopeUser, userID: userID, name: name, dir: r.userDir(userID, name)}
}

func (r *Runtimes) recordUser(id int64, hash, lastError string) {
	if err := r.db.SetUserServerInstallResult(context.WithoutCancel(r.ctx), id, hash, lastError); err != nil {
		r.log.Error("recording an activation's install result", "id", id, "err", err)
	}
}

// reapIdleUsers stops user runtimes that have not been used for
// IdleTimeout and have no tool call in flight.
func (r *Runtimes) reapIdleUsers() {
	every := max(r.cfg.IdleTimeout/4, 10*time.Millisecond)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-tick.C:
		}
		r.stopIdleUsers(time.Now())
	}
}

func (r *Runtimes) stopIdleUsers(now time.Time) {
	var idle []*userRuntime
	r.mu.Lock()
	for id, ur := range r.users {
		last := time.Unix(0, ur.lastUsed.Load())
		if ur.started() && ur.inflight.Load() == 0 && now.Sub(last) >= r.cfg.IdleTimeout {
			delete(r.users, id)
			idle = append(idle, ur)
		}
	}
	r.mu.Unlock()
	for _, ur := range idle {
		r.log.Info("stopping idle user connectors", "user", ur.userID)
		ur.close()
	}
}

// usedProvider is a user's own connectors seen through their view. It
// names the user, not a runtime: each use finds the user's runtime and
// starts it again if the idle timer stopped it, so a view (an MCP client's
// session) outlives quiet periods. Every use counts as activity, and a
// call in flight keeps the runtime alive.
type usedProvider struct {
	r      *Runtimes
	userID int64
}

// runtime returns the user's runtime, or nil once Patchbay is stopping.
func (p usedProvider) runtime() *userRuntime {
	ur, _, err := p.r.userRuntime(p.userID)
	if err != nil {
		return nil
	}
	return ur
}

func (p usedProvider) ToolDefs() []pbmcp.ToolDef {
	if ur := p.runtime(); ur != nil {
		return ur.mgr.ToolDefs()
	}
	return nil
}

func (p usedProvider) States() []pbmcp.State {
	if ur := p.runtime(); ur != nil {
		return ur.mgr.States()
	}
	return nil
}

func (p usedProvider) CallTool(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
	ur := p.runtime()
	if ur == nil {
		return nil, fmt.Errorf("%w: %w", pbmcp.ErrNotReady, errClosed)
	}
	ur.inflight.Add(1)
	defer func() {
		ur.inflight.Add(-1)
		ur.touch()
	}()
	// A runtime (re)starting now is waited for, so the call finds the
	// user's connectors up instead of "not ready".
	select {
	case <-ur.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return ur.mgr.CallTool(ctx, name, args)
}
