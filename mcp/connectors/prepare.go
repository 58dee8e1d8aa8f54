package connectors

import (
	"context"
	"io"
	"strconv"
	"strings"
	"time"

	"patchbay"
	"patchbay/db"
	"patchbay/mcp/install"
)

// target is one connector install: whose it is and where it lives.
type target struct {
	scope  string // db.InstallScopeGlobal or db.InstallScopeUser
	userID int64
	name   string
	dir    string
}

// Reasons recorded on install runs: which path ran the reconciler.
const (
	ReasonEnable   = "enable"
	ReasonRefresh  = "refresh"
	ReasonUpdate   = "update"
	ReasonActivate = "activate"
	ReasonStart    = "start"
)

// prepare lands a local connector's files in t.dir with its dependencies
// installed, and runs its verify command (in the staging copy, with
// exactly the env the server will get, before the copy replaces a working
// one). It is the only function that writes connector files: enabling,
// refreshing and updating a global connector, activating one for a user,
// and starting either runtime all call it. Output goes to out as it
// happens. A remote connector has no files and prepare does nothing.
func (r *Runtimes) prepare(ctx context.Context, t target, e db.CatalogEntry, cfg db.ServerConfig, secrets map[string]string, out io.Writer) (install.Result, error) {
	if e.Kind != db.KindLocal {
		return install.Result{}, nil
	}
	if e.Source == "" {
		return install.Result{}, patchbay.Errorf(patchbay.EINVALID, "Connector %s has no source files to install.", e.Name)
	}
	opts := install.Options{AllowScripts: e.InstallScripts, PipArgs: r.cfg.PipArgs}
	if e.Verify != nil {
		opts.Check = func(ctx context.Context, staging string, out io.Writer) error {
			spec, err := buildSpec(t.name, e, cfg, secrets, staging)
			if err != nil {
				return err
			}
			timeout := r.cfg.VerifyTimeout
			if e.Verify.TimeoutSeconds > 0 {
				timeout = time.Duration(e.Verify.TimeoutSeconds) * time.Second
			}
			log, err := install.Verify(ctx, staging, processEnv(spec), e.Verify.Command, timeout)
			io.WriteString(out, log)
			return err
		}
	}
	return r.cfg.Reconciler.Ensure(ctx, e.Source, t.dir, opts, out)
}

// ensureCurrent is prepare for the start paths, called with t's lock
// held: when the install already matches its source it returns at once
// and records nothing; otherwise it runs prepare as a recorded job, in
// the caller's goroutine.
func (r *Runtimes) ensureCurrent(ctx context.Context, t target, e db.CatalogEntry, cfg db.ServerConfig, secrets map[string]string, record func(hash, lastError string)) error {
	if e.Kind != db.KindLocal {
		return nil
	}
	if e.Source != "" {
		if _, _, ok, err := install.Status(e.Source, t.dir); err == nil && ok {
			return nil
		}
	}
	// Bounded like any job: a hung npm or pip must not hold the
	// connector's lock until shutdown.
	ctx, cancel := context.WithTimeout(ctx, r.cfg.JobTimeout)
	defer cancel()
	j, err := r.newJob(ctx, t, ReasonStart, secrets)
	if err != nil {
		return err
	}
	r.execute(ctx, j, secrets, func(ctx context.Context, j *Job) (install.Result, error) {
		res, err := r.prepare(ctx, t, e, cfg, secrets, j)
		record(res.Hash, describe(err, secrets))
		return res, err
	})
	return j.Wait(ctx)
}

// runJob records an install run for t and runs fn in the background under
// the runtimes' lifetime (not the request's), bounded by JobTimeout and
// holding t's lock, so operations on one connector never interleave. The
// job's output is readable while it runs; when fn returns, the run is
// stored with its log, status and error (secret values redacted).
func (r *Runtimes) runJob(ctx context.Context, t target, reason string, secrets map[string]string, fn func(ctx context.Context, j *Job) (install.Result, error)) (*Job, error) {
	j, err := r.newJob(ctx, t, reason, secrets)
	if err != nil {
		return nil, err
	}
	started := r.goBackground(func() {
		jctx, cancel := context.WithTimeout(r.ctx, r.cfg.JobTimeout)
		defer cancel()
		unlock, err := r.lockTarget(jctx, t)
		if err != nil {
			r.execute(jctx, j, secrets, func(context.Context, *Job) (install.Result, error) { return install.Result{}, err })
			return
		}
		defer unlock()
		r.execute(jctx, j, secrets, fn)
	})
	if !started {
		r.execute(ctx, j, secrets, func(context.Context, *Job) (install.Result, error) { return install.Result{}, errClosed })
		return nil, errClosed
	}
	return j, nil
}

// newJob records a running install run and registers its live job.
func (r *Runtimes) newJob(ctx context.Context, t target, reason string, secrets map[string]string) (*Job, error) {
	run, err := r.db.StartInstallRun(ctx, db.InstallRun{Scope: t.scope, UserID: t.userID, Connector: t.name, Reason: reason})
	if err != nil {
		return nil, err
	}
	j := newJob(run.ID, secretValues(secrets))
	j.target = t
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		r.db.FinishInstallRun(context.WithoutCancel(ctx), run.ID, db.InstallFailed, "", "", errClosed.Error())
		return nil, errClosed
	}
	r.jobs[run.ID] = j
	return j, nil
}

// execute runs fn as job j and stores the outcome on its install run.
func (r *Runtimes) execute(ctx context.Context, j *Job, secrets map[string]string, fn func(ctx context.Context, j *Job) (install.Result, error)) {
	res, err := fn(ctx, j)
	status, msg := db.InstallSucceeded, ""
	switch {
	case err != nil:
		status, msg = db.InstallFailed, describe(err, secrets)
		j.Note("failed: " + msg)
	case res.Hash != "" && !res.Changed:
		status = db.InstallUnchanged
	}
	// The run must be stored even when shutdown cancelled the job.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if ferr := r.db.FinishInstallRun(sctx, j.RunID, status, res.Hash, j.Log(), msg); ferr != nil {
		r.log.Error("recording install run", "run", j.RunID, "err", ferr)
	}
	r.mu.Lock()
	delete(r.jobs, j.RunID)
	r.mu.Unlock()
	// Whoever waits on the job (and may log its error) gets it redacted.
	j.finish(redacted(err, secrets))
}

// lockTarget takes t's lock: one operation at a time per connector.
func (r *Runtimes) lockTarget(ctx context.Context, t target) (func(), error) {
	return r.locks.Lock(ctx, t.scope+"/"+strconv.FormatInt(t.userID, 10)+"/"+t.name)
}

// liveJob returns the running job that records run id, if any.
func (r *Runtimes) liveJob(id int64) *Job {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.jobs[id]
}

// runningJobFor returns the running job for a connector, if any.
func (r *Runtimes) runningJobFor(scope string, userID int64, name string) *Job {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, j := range r.jobs {
		if j.target.scope == scope && j.target.userID == userID && j.target.name == name {
			return j
		}
	}
	return nil
}

// redacted is err with the connector's secret values replaced and its
// code kept, for everything that outlives the job.
func redacted(err error, secrets map[string]string) error {
	if err == nil {
		return nil
	}
	return &patchbay.Error{Code: patchbay.ErrorCode(err), Message: describe(err, secrets)}
}

// describe turns err into text fit for a page and the install record:
// a patchbay.Error's message, otherwise the error itself (these are
// connector failures such as "exited with code 1: …"), with the
// connector's secret values redacted.
func describe(err error, secrets map[string]string) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	if patchbay.ErrorCode(err) != patchbay.EINTERNAL {
		msg = patchbay.ErrorMessage(err)
	}
	for _, v := range secretValues(secrets) {
		msg = strings.ReplaceAll(msg, v, "[REDACTED]")
	}
	return msg
}
