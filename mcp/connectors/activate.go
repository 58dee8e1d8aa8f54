package connectors

import (
	"context"
	"os"

	"patchbay"
	"patchbay/db"
	pbmcp "patchbay/mcp"
	"patchbay/mcp/install"
)

// Activation is a user's request to run a catalog connector for
// themselves.
type Activation struct {
	CatalogName string
	// Name is the connector's name for this user; the catalog name if "".
	Name string
	// Inputs are values for the entry's non-secret inputs, Secrets for
	// its secret ones. Undeclared keys are ignored.
	Inputs  map[string]string
	Secrets map[string]string
}

// Activate checks the request, then runs a job that installs the
// connector into the user's own directory, connects it in their runtime
// and only then records the activation. If any step fails nothing is
// kept: no row, no files, no running server; the job's error says why.
func (r *Runtimes) Activate(ctx context.Context, p *patchbay.Principal, a Activation) (*Job, error) {
	e, err := r.db.CatalogEntryByName(ctx, a.CatalogName)
	if err != nil {
		return nil, err
	}
	if err := mayActivate(p, e, "activate"); err != nil {
		return nil, err
	}
	name := a.Name
	if name == "" {
		name = e.Name
	}
	if !pbmcp.ValidName(name) {
		return nil, patchbay.Errorf(patchbay.EINVALID, "%q is not a valid connector name: use letters, digits, - and single _.", name)
	}
	userID := p.User.ID
	if _, err := r.db.UserServerByName(ctx, userID, name); err == nil {
		return nil, errNameTaken(name)
	} else if patchbay.ErrorCode(err) != patchbay.ENOTFOUND {
		return nil, err
	}
	cfg, secrets := splitInputs(e, a.Inputs, a.Secrets)
	if err := CheckInputs(e, cfg, secrets); err != nil {
		return nil, err
	}
	authState := db.AuthNone
	if len(secrets) > 0 {
		authState = db.AuthReady
	}

	t := r.userTarget(userID, name)
	return r.runJob(ctx, t, ReasonActivate, secrets, func(ctx context.Context, j *Job) (install.Result, error) {
		// Checked again under the connector's lock: a second activation
		// of the same name that raced the first must not touch its files.
		if _, err := r.db.UserServerByName(ctx, userID, name); err == nil {
			return install.Result{}, errNameTaken(name)
		}
		// Whatever fails below, the user is left as they were.
		keep := false
		var ur *userRuntime
		defer func() {
			if keep {
				return
			}
			if ur != nil {
				ur.mgr.Remove(name)
			}
			os.RemoveAll(t.dir)
		}()

		res, err := r.prepare(ctx, t, e, cfg, secrets, j)
		if err != nil {
			return res, err
		}
		row := db.UserServer{
			UserID: userID, CatalogID: e.ID, CatalogName: e.Name, Name: name,
			Kind: e.Kind, Transport: e.Transport, Config: cfg, AuthState: authState,
			OAuthProvider: e.OAuthProvider, Deliver: e.Deliver,
		}
		spec, err := UserSpec(e, row, secrets, t.dir)
		if err != nil {
			return res, err
		}
		if ur, _, err = r.userRuntime(userID); err != nil {
			return res, err
		}
		if err := connectOne(ctx, ur.mgr, spec, j); err != nil {
			return res, err
		}
		created, err := r.db.CreateUserServer(ctx, row, secrets)
		if err != nil {
			return res, err
		}
		keep = true
		r.recordUser(created.ID, res.Hash, "")
		return res, nil
	})
}

// Deactivate stops a user's connector and removes it, its credential and
// its files.
func (r *Runtimes) Deactivate(ctx context.Context, userID int64, name string) error {
	if !pbmcp.ValidName(name) {
		return patchbay.Errorf(patchbay.ENOTFOUND, "No such connector.")
	}
	unlock, err := r.lockTarget(ctx, r.userTarget(userID, name))
	if err != nil {
		return err
	}
	defer unlock()
	row, err := r.db.UserServerByName(ctx, userID, name)
	if err != nil {
		return err
	}
	r.mu.Lock()
	ur := r.users[userID]
	r.mu.Unlock()
	if ur != nil {
		ur.mgr.Remove(name)
	}
	if err := r.db.DeleteUserServer(ctx, userID, row.ID); err != nil {
		return err
	}
	if err := os.RemoveAll(r.userDir(userID, name)); err != nil {
		r.log.Warn("removing a deactivated connector's files", "user", userID, "connector", name, "err", err)
	}
	return nil
}

func errNameTaken(name string) error {
	return patchbay.Errorf(patchbay.ECONFLICT, "You already have a connector named %s.", name)
}

// mayActivate is the rule for a person activating (or testing) a catalog
// entry for themselves: an entry meant for users, of a kind their role
// may activate, that signs in in a way this version supports. verb names
// the action in the error.
func mayActivate(p *patchbay.Principal, e db.CatalogEntry, verb string) error {
	if e.Scope == db.ScopeGlobal {
		return patchbay.Errorf(patchbay.EINVALID, "%s is shared by an administrator and cannot be activated per user.", e.Name)
	}
	need := patchbay.CapRegisterLocalFromCatalog
	if e.Kind == db.KindRemote {
		need = patchbay.CapRegisterRemote
	}
	if !p.Can(need) {
		return patchbay.Errorf(patchbay.EFORBIDDEN, "Your role may not %s %s connectors.", verb, e.Kind)
	}
	return unsupportedSignIn(e, verb)
}

// unsupportedSignIn refuses entries that sign in with OAuth or QR pairing,
// which this version cannot run yet.
func unsupportedSignIn(e db.CatalogEntry, verb string) error {
	if e.AuthType == "oauth" || e.AuthType == "qr" {
		return patchbay.Errorf(patchbay.EINVALID, "%s signs in with %s, which this version of Patchbay cannot %s yet.", e.Name, e.AuthType, verb)
	}
	return nil
}
