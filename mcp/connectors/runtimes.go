// Package connectors runs Patchbay's connectors from the store. It owns
// the global runtime (shared connectors on the host, connected at boot),
// the per-user runtimes (a user's own activations, started on first use
// and stopped when idle) and the connector lifecycle: enable, refresh,
// activate, deactivate. It is the one place database rows become
// mcp.Specs (spec.go) and the one place connector files land on disk
// (prepare.go). It knows nothing of HTTP or views.
package connectors

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"patchbay/db"
	"patchbay/mcp"
	"patchbay/mcp/install"
	"patchbay/mcp/keylock"
)

// Config wires the runtimes to the store and the host.
type Config struct {
	DB *db.DB
	// DataDir is Patchbay's data directory; connector installs live
	// under DataDir/connectors.
	DataDir string
	// Reconciler installs dependencies; a fresh one if nil.
	Reconciler *install.Reconciler
	// PipArgs are extra pip arguments for every install (an index URL,
	// or --no-index --find-links for offline hosts).
	PipArgs []string
	// Manager tunes supervision of every runtime.
	Manager mcp.Options
	// IdleTimeout stops a user's runtime after this long without use
	// (30m).
	IdleTimeout time.Duration
	// VerifyTimeout bounds a verify command whose manifest sets none (2m).
	VerifyTimeout time.Duration
	// JobTimeout bounds one lifecycle operation, install included (15m).
	JobTimeout time.Duration
	Log        *slog.Logger
}

// Runtimes is the global runtime, the per-user runtimes and the jobs that
// change them.
type Runtimes struct {
	cfg    Config
	db     *db.DB
	root   string
	log    *slog.Logger
	global *mcp.Manager

	// ctx lives as long as the Runtimes; jobs and background starts run
	// under it so a finished HTTP request does not cancel them.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// locks serialise operations on one connector (see lockTarget).
	locks keylock.Locks

	mu     sync.Mutex
	users  map[int64]*userRuntime
	jobs   map[int64]*Job
	closed bool
}

// New returns runtimes with nothing started; call Start.
func New(cfg Config) *Runtimes {
	if cfg.Reconciler == nil {
		cfg.Reconciler = &install.Reconciler{}
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 30 * time.Minute
	}
	if cfg.VerifyTimeout <= 0 {
		cfg.VerifyTimeout = 2 * time.Minute
	}
	if cfg.JobTimeout <= 0 {
		cfg.JobTimeout = 15 * time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Manager.Logger == nil {
		cfg.Manager.Logger = cfg.Log
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Runtimes{
		cfg:    cfg,
		db:     cfg.DB,
		root:   filepath.Join(cfg.DataDir, "connectors"),
		log:    cfg.Log,
		global: mcp.NewManager(cfg.Manager),
		ctx:    ctx,
		cancel: cancel,
		users:  map[int64]*userRuntime{},
		jobs:   map[int64]*Job{},
	}
}

// Start marks install runs a previous process left unfinished, prunes old
// ones, connects the enabled global connectors in the background (so a
// slow connector never delays the web server) and starts the idle reaper.
func (r *Runtimes) Start(ctx context.Context) error {
	if err := os.MkdirAll(r.root, 0o700); err != nil {
		return err
	}
	if n, err := r.db.MarkInterruptedInstallRuns(ctx); err != nil {
		return err
	} else if n > 0 {
		r.log.Warn("install runs interrupted by the last stop", "count", n)
	}
	if _, err := r.db.PruneInstallRuns(ctx, keepInstallRuns); err != nil {
		return err
	}
	// Test connections a crash interrupted left their scratch installs.
	if err := os.RemoveAll(filepath.Join(r.root, scratchRoot)); err != nil {
		return err
	}
	// The boot list is read now: a connector added after Start is
	// brought up by its own enable job, not raced by the boot.
	gs, err := r.db.GlobalServers(ctx)
	if err != nil {
		return err
	}
	r.goBackground(func() {
		if err := r.startGlobals(r.ctx, gs); err != nil {
			r.log.Warn("global connectors: not all are ready", "err", err)
		}
	})
	r.goBackground(r.reapIdleUsers)
	return nil
}

// Global is the global runtime.
func (r *Runtimes) Global() *mcp.Manager { return r.global }

// Close cancels running jobs, stops every user runtime and the global
// one, and waits for their processes to exit.
func (r *Runtimes) Close() error {
	r.mu.Lock()
	r.closed = true
	users := make([]*userRuntime, 0, len(r.users))
	for id, u := range r.users {
		users = append(users, u)
		delete(r.users, id)
	}
	r.mu.Unlock()
	r.cancel()
	var wg sync.WaitGroup
	for _, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u.close()
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.global.Close()
	}()
	wg.Wait()
	r.wg.Wait()
	return nil
}

// goBackground runs fn on a goroutine that Close waits for, and reports
// false, running nothing, once Close has begun: the WaitGroup is added to
// under r.mu, which Close holds while it marks the runtimes closed.
func (r *Runtimes) goBackground(fn func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.goBackgroundLocked(fn)
}

// goBackgroundLocked is goBackground for a caller that holds r.mu.
func (r *Runtimes) goBackgroundLocked(fn func()) bool {
	if r.closed {
		return false
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		fn()
	}()
	return true
}

// globalDir and userDir are where installs live. Names are validated
// connector names (no "/" or ".."), so they are safe path elements.
func (r *Runtimes) globalDir(name string) string {
	return filepath.Join(r.root, "global", name)
}

func (r *Runtimes) userDir(userID int64, name string) string {
	return filepath.Join(r.root, "users", strconv.FormatInt(userID, 10), name)
}

var errClosed = errors.New("connectors: shutting down")

// keepInstallRuns is how many finished install runs per connector are kept
// across restarts; older ones are pruned at start-up.
const keepInstallRuns = 20
