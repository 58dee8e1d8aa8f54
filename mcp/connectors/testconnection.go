package connectors

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"time"

	"patchbay"
	"patchbay/db"
	pbmcp "patchbay/mcp"
)

// testConnectTimeout bounds initialize + tools/list of one "Test
// connection"; the install of a local connector before it is not counted.
const testConnectTimeout = 15 * time.Second

// TestConnection is the "Test connection" button: it connects a catalog
// entry with the given inputs and secrets once, initializes it, lists its
// tools and stops it, and keeps nothing. A remote entry is connected with
// the request headers its inputs make; a local one is installed through
// the one install path (prepare, verify included) into a fresh scratch
// directory under <data-dir>/connectors/scratch, run there and removed
// with it. No install run is recorded and nothing is written to the
// database.
//
// It returns the tool names (as the server names them, without the
// connector prefix). A connector that does not work is an EINVALID error
// whose message says why, for a person: "command not found: X", "exited
// with code N: <stderr tail>", "timed out after D", "auth failed: HTTP
// 401 from <url>", an install or verify failure, or the inputs that are
// missing; the secrets given are redacted from it.
//
// Remote entries need mcp.register_remote, local ones
// mcp.register_local_from_catalog; catalog administrators may test any
// entry, including global-only ones.
func (r *Runtimes) TestConnection(ctx context.Context, p *patchbay.Principal, catalogName string, inputs, secrets map[string]string) ([]string, error) {
	e, err := r.db.CatalogEntryByName(ctx, catalogName)
	if err != nil {
		return nil, err
	}
	if err := mayTest(p, e); err != nil {
		return nil, err
	}
	cfg, sec := splitInputs(e, inputs, secrets)
	return r.testConnection(ctx, e, cfg, sec)
}

// TestGlobalConnection is TestConnection for the settings form of a
// shared connector: a secret left blank means the stored one, as when the
// settings are saved. It needs mcp.manage_catalog.
func (r *Runtimes) TestGlobalConnection(ctx context.Context, p *patchbay.Principal, id int64, inputs, secrets map[string]string) ([]string, error) {
	if !p.Can(patchbay.CapManageCatalog) {
		return nil, patchbay.Errorf(patchbay.EFORBIDDEN, "Only catalog administrators can test a shared connector.")
	}
	st, err := r.globalSettings(ctx, id, inputs, secrets)
	if err != nil {
		return nil, err
	}
	return r.testConnection(ctx, st.entry, st.cfg, st.merged)
}

// mayTest says whether p may test entry e: catalog administrators may
// test any entry, anyone else what they may activate.
func mayTest(p *patchbay.Principal, e db.CatalogEntry) error {
	if p.Can(patchbay.CapManageCatalog) {
		return nil
	}
	return mayActivate(p, e, "test")
}

// testConnection checks the inputs, then connects e once with them.
func (r *Runtimes) testConnection(ctx context.Context, e db.CatalogEntry, cfg db.ServerConfig, secrets map[string]string) ([]string, error) {
	if err := unsupportedSignIn(e, "test"); err != nil {
		return nil, err
	}
	if err := CheckInputs(e, cfg, secrets); err != nil {
		return nil, err
	}
	// Bounded like a job, and ended by shutdown; Close waits for the
	// scratch directory to be removed.
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, errClosed
	}
	r.wg.Add(1)
	r.mu.Unlock()
	defer r.wg.Done()
	ctx, cancel := context.WithTimeout(ctx, r.cfg.JobTimeout)
	defer cancel()
	defer context.AfterFunc(r.ctx, cancel)()

	tools, err := r.connectOnce(ctx, e, cfg, secrets)
	if err != nil {
		return nil, patchbay.Errorf(patchbay.EINVALID, "%s", describe(err, secrets))
	}
	return tools, nil
}

func (r *Runtimes) connectOnce(ctx context.Context, e db.CatalogEntry, cfg db.ServerConfig, secrets map[string]string) ([]string, error) {
	dir := ""
	if e.Kind == db.KindLocal {
		scratch, err := r.scratchDir()
		if err != nil {
			return nil, err
		}
		defer func() {
			if err := os.RemoveAll(scratch); err != nil {
				r.log.Warn("removing a test connection's scratch directory", "dir", scratch, "err", err)
			}
		}()
		// The install lands in a directory of its own inside the scratch
		// one, so the reconciler's sibling staging directory is removed
		// with it too.
		t := target{scope: "test", name: e.Name, dir: filepath.Join(scratch, e.Name)}
		if _, err := r.prepare(ctx, t, e, cfg, secrets, io.Discard); err != nil {
			return nil, err
		}
		dir = t.dir
	}
	spec, err := buildSpec(e.Name, e, cfg, secrets, dir)
	if err != nil {
		return nil, err
	}
	defs, err := pbmcp.TestConnectIn(ctx, spec, r.cfg.Manager.Runner, testConnectTimeout)
	if err != nil {
		return nil, err
	}
	tools := make([]string, 0, len(defs))
	for _, d := range defs {
		tools = append(tools, d.Tool.Name)
	}
	return tools, nil
}

// scratchRoot is where test connections install, under the connectors
// directory; Start empties it.
const scratchRoot = "scratch"

// scratchDir makes a fresh, private directory under
// <data-dir>/connectors/scratch.
func (r *Runtimes) scratchDir() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	dir := filepath.Join(r.root, scratchRoot, hex.EncodeToString(b))
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return "", err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", err
	}
	return dir, nil
}
