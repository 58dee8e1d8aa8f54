package connectors

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"patchbay"
	"patchbay/db"
	"patchbay/mcp"
	"patchbay/mcp/install"
)

// startGlobals installs (when the source changed or the install is
// missing) and connects every enabled global connector, each on its own
// so one slow install or server never holds up the others.
func (r *Runtimes) startGlobals(ctx context.Context, gs []db.GlobalServer) error {
	errs := make([]error, len(gs))
	var wg sync.WaitGroup
	for i, g := range gs {
		if !g.Enabled {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.startGlobal(ctx, g)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// startGlobal is the boot path of one global connector.
func (r *Runtimes) startGlobal(ctx context.Context, g db.GlobalServer) error {
	t := r.globalTarget(g)
	unlock, err := r.lockTarget(ctx, t)
	if err != nil {
		return err
	}
	defer unlock()
	// Read again under the lock: a disable or delete that ran first has
	// the last word, and an enable or refresh that ran first connected it
	// already.
	g, err = r.db.GlobalServerByID(ctx, g.ID)
	if patchbay.ErrorCode(err) == patchbay.ENOTFOUND || (err == nil && !g.Enabled) {
		return nil
	} else if err != nil {
		return err
	}
	if _, ok := r.global.State(g.Name); ok {
		return nil
	}
	e, secrets, err := r.globalParts(ctx, g)
	if err != nil {
		r.recordGlobal(g.ID, "", describe(err, nil))
		return err
	}
	err = r.ensureCurrent(ctx, t, e, g.Config, secrets, func(hash, lastError string) { r.recordGlobal(g.ID, hash, lastError) })
	if err != nil {
		return fmt.Errorf("%s: %w", g.Name, err)
	}
	spec, err := GlobalSpec(e, g, secrets, t.dir)
	if err != nil {
		r.recordGlobal(g.ID, "", describe(err, secrets))
		return err
	}
	return r.global.ConnectAll(ctx, []mcp.Spec{spec})
}

// CreateGlobal adds a global connector from a catalog entry. When g is
// enabled it is installed and connected by the returned job; otherwise
// the job is nil.
func (r *Runtimes) CreateGlobal(ctx context.Context, actorID int64, g db.GlobalServer, secrets map[string]string) (db.GlobalServer, *Job, error) {
	e, err := r.db.CatalogEntryByID(ctx, g.CatalogID)
	if err != nil {
		return db.GlobalServer{}, nil, err
	}
	if g.Name == "" {
		g.Name = e.Name
	}
	g.Config, secrets = splitInputs(e, g.Config.Inputs, secrets)
	if err := CheckInputs(e, g.Config, secrets); err != nil {
		return db.GlobalServer{}, nil, err
	}
	g, err = r.db.CreateGlobalServer(ctx, actorID, g, secrets)
	if err != nil {
		return db.GlobalServer{}, nil, err
	}
	if !g.Enabled {
		return g, nil, nil
	}
	j, err := r.installAndConnectGlobal(ctx, g, ReasonEnable)
	return g, j, err
}

// EnableGlobal enables a global connector, installs it and connects it.
func (r *Runtimes) EnableGlobal(ctx context.Context, actorID, id int64) (*Job, error) {
	g, err := r.db.GlobalServerByID(ctx, id)
	if err != nil {
		return nil, err
	}
	// Refused before it is enabled: a connector that cannot start (its
	// catalog entry now needs an input it lacks) must not stay enabled
	// only to fail at every boot.
	if _, _, err := r.checkedGlobalParts(ctx, g); err != nil {
		return nil, err
	}
	if err := r.db.SetGlobalEnabled(ctx, actorID, id, true); err != nil {
		return nil, err
	}
	g.Enabled = true
	return r.installAndConnectGlobal(ctx, g, ReasonEnable)
}

// RefreshGlobal reinstalls a global connector from its (updated) source
// and reconnects it if it is enabled. The marketplace's Update calls it
// after landing new source files; without it a connector whose update
// added a requirements.txt would restart without its dependencies.
func (r *Runtimes) RefreshGlobal(ctx context.Context, actorID, id int64) (*Job, error) {
	g, err := r.db.GlobalServerByID(ctx, id)
	if err != nil {
		return nil, err
	}
	return r.installAndConnectGlobal(ctx, g, ReasonRefresh)
}

// UpdateGlobal saves a global connector's settings and secrets (nil
// secrets keep the stored ones; see db.UpdateGlobalServer) and, if it is
// enabled, reinstalls as needed and reconnects it with them.
func (r *Runtimes) UpdateGlobal(ctx context.Context, actorID, id int64, inputs map[string]string, secrets map[string]string) (*Job, error) {
	st, err := r.globalSettings(ctx, id, inputs, secrets)
	if err != nil {
		return nil, err
	}
	// Check what the connector will run with, stored secrets included,
	// before saving anything.
	if err := CheckInputs(st.entry, st.cfg, st.merged); err != nil {
		return nil, err
	}
	g, err := r.db.UpdateGlobalServer(ctx, actorID, id, st.cfg, st.changed)
	if err != nil {
		return nil, err
	}
	if !g.Enabled {
		return nil, nil
	}
	return r.installAndConnectGlobal(ctx, g, ReasonUpdate)
}

// globalSettings is a settings form applied to a global connector: its
// catalog entry, the declared non-secret inputs, the secrets the form
// changes (blank fields keep the stored ones) and the stored secrets with
// those changes, which is what the connector would run with.
type globalSettings struct {
	entry           db.CatalogEntry
	cfg             db.ServerConfig
	changed, merged map[string]string
}

func (r *Runtimes) globalSettings(ctx context.Context, id int64, inputs, secrets map[string]string) (globalSettings, error) {
	g, err := r.db.GlobalServerByID(ctx, id)
	if err != nil {
		return globalSettings{}, err
	}
	e, err := r.db.CatalogEntryByID(ctx, g.CatalogID)
	if err != nil {
		return globalSettings{}, err
	}
	cfg, changed := splitInputs(e, inputs, secrets)
	merged, err := r.db.GlobalServerSecrets(ctx, id)
	if err != nil {
		return globalSettings{}, err
	}
	for k, v := range changed {
		merged[k] = v
	}
	return globalSettings{entry: e, cfg: cfg, changed: changed, merged: merged}, nil
}

// DisableGlobal stops a global connector and keeps its settings.
func (r *Runtimes) DisableGlobal(ctx context.Context, actorID, id int64) error {
	g, unlock, err := r.lockedGlobal(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	if err := r.db.SetGlobalEnabled(ctx, actorID, id, false); err != nil {
		return err
	}
	r.global.Remove(g.Name)
	return nil
}

// DeleteGlobal stops a global connector and removes it, its grants and
// its installed files.
func (r *Runtimes) DeleteGlobal(ctx context.Context, actorID, id int64) error {
	g, unlock, err := r.lockedGlobal(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	r.global.Remove(g.Name)
	if err := r.db.DeleteGlobalServer(ctx, actorID, id); err != nil {
		return err
	}
	if err := os.RemoveAll(r.globalDir(g.Name)); err != nil {
		r.log.Warn("removing a deleted connector's files", "connector", g.Name, "err", err)
	}
	return nil
}

// lockedGlobal loads a global connector and takes its lock.
func (r *Runtimes) lockedGlobal(ctx context.Context, id int64) (db.GlobalServer, func(), error) {
	g, err := r.db.GlobalServerByID(ctx, id)
	if err != nil {
		return db.GlobalServer{}, nil, err
	}
	unlock, err := r.lockTarget(ctx, r.globalTarget(g))
	if err != nil {
		return db.GlobalServer{}, nil, err
	}
	return g, unlock, nil
}

// installAndConnectGlobal is the host path that lands new files: enable,
// refresh and update all come here, so each installs through prepare.
func (r *Runtimes) installAndConnectGlobal(ctx context.Context, g db.GlobalServer, reason string) (*Job, error) {
	e, secrets, err := r.checkedGlobalParts(ctx, g)
	if err != nil {
		return nil, err
	}
	t := r.globalTarget(g)
	return r.runJob(ctx, t, reason, secrets, func(ctx context.Context, j *Job) (install.Result, error) {
		// Read under the connector's lock: a delete or disable that ran
		// while this job waited has the last word.
		cur, err := r.db.GlobalServerByID(ctx, g.ID)
		if err != nil {
			return install.Result{}, err
		}
		res, err := r.prepare(ctx, t, e, cur.Config, secrets, j)
		if err != nil {
			r.recordGlobal(g.ID, "", describe(err, secrets))
			return res, err
		}
		if !cur.Enabled {
			r.recordGlobal(g.ID, res.Hash, "")
			j.Note("installed; not started because the connector is disabled")
			return res, nil
		}
		spec, err := GlobalSpec(e, cur, secrets, t.dir)
		if err != nil {
			r.recordGlobal(g.ID, res.Hash, describe(err, secrets))
			return res, err
		}
		err = connectOne(ctx, r.global, spec, j)
		r.recordGlobal(g.ID, res.Hash, describe(err, secrets))
		return res, err
	})
}

// connectOne (re)connects spec in m and notes the outcome on j.
func connectOne(ctx context.Context, m *mcp.Manager, spec mcp.Spec, j *Job) error {
	j.Note("connecting " + spec.Name)
	if err := m.ConnectFirst(ctx, spec); err != nil {
		return err
	}
	n := 0
	for _, d := range m.ToolDefs() {
		if d.Connector == spec.Name {
			n++
		}
	}
	noun := "tools"
	if n == 1 {
		noun = "tool"
	}
	j.Note(fmt.Sprintf("%s is ready with %d %s", spec.Name, n, noun))
	return nil
}

// globalParts loads what building a global connector's spec needs.
func (r *Runtimes) globalParts(ctx context.Context, g db.GlobalServer) (db.CatalogEntry, map[string]string, error) {
	e, err := r.db.CatalogEntryByID(ctx, g.CatalogID)
	if err != nil {
		return db.CatalogEntry{}, nil, err
	}
	secrets, err := r.db.GlobalServerSecrets(ctx, g.ID)
	if err != nil {
		return db.CatalogEntry{}, nil, err
	}
	return e, secrets, nil
}

// checkedGlobalParts is globalParts for a connector about to start: its
// required inputs must all have values.
func (r *Runtimes) checkedGlobalParts(ctx context.Context, g db.GlobalServer) (db.CatalogEntry, map[string]string, error) {
	e, secrets, err := r.globalParts(ctx, g)
	if err != nil {
		return db.CatalogEntry{}, nil, err
	}
	if err := CheckInputs(e, g.Config, secrets); err != nil {
		return db.CatalogEntry{}, nil, err
	}
	return e, secrets, nil
}

func (r *Runtimes) globalTarget(g db.GlobalServer) target {
	return target{scope: db.InstallScopeGlobal, name: g.Name, dir: r.globalDir(g.Name)}
}

// recordGlobal stores the outcome of an install or connect on the row;
// it must land even if the job's context ended.
func (r *Runtimes) recordGlobal(id int64, hash, lastError string) {
	if err := r.db.SetGlobalInstallResult(context.WithoutCancel(r.ctx), id, hash, lastError); err != nil {
		r.log.Error("recording a global connector's install result", "id", id, "err", err)
	}
}

// splitInputs keeps only the inputs the catalog entry declares, sorting
// them into non-secret settings and secrets, so a form cannot smuggle a
// secret into the plain config or an undeclared variable into the
// process. A nil secrets map stays nil ("keep the stored secrets").
func splitInputs(e db.CatalogEntry, inputs, secrets map[string]string) (db.ServerConfig, map[string]string) {
	cfg := db.ServerConfig{Inputs: map[string]string{}}
	var sec map[string]string
	if secrets != nil {
		sec = map[string]string{}
	}
	for _, in := range e.Inputs {
		if in.Secret {
			// An empty secret field means "keep the stored one".
			if v := secrets[in.Name]; v != "" && sec != nil {
				sec[in.Name] = v
			}
		} else if v, ok := inputs[in.Name]; ok {
			cfg.Inputs[in.Name] = v
		}
	}
	return cfg, sec
}
