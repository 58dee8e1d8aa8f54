package handlers

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"patchbay/db"
)

// Canary connector secrets: typed into forms, they must never come back.
var connectorCanaries = map[string]string{
	"shared connector secret":                 "canary-shared-secret-1a3c5e7b9d",
	"shared connector secret (plain form)":    "canary-shared-plain-2b4d6f8a0c",
	"shared connector secret (refused)":       "canary-shared-refused-3c5e7a9b1d",
	"shared connector secret (settings)":      "canary-shared-settings-4d6f8b0c2e",
	"activation secret":                       "canary-activation-5e7a9c1d3f",
	"activation secret (plain form)":          "canary-activation-plain-6f8b0d2e4a",
	"activation secret (failed activation)":   "canary-activation-failed-7a9c1e3f5b",
	"activation secret (conflicting name)":    "canary-activation-conflict-8b0d2f4a6c",
	"activation secret (shared-only refused)": "canary-activation-refused-9c1e3a5b7d",
	"test connection secret (shared form)":    "canary-test-shared-0d2f4b6c8e",
	"test connection secret (settings form)":  "canary-test-settings-1e3a5c7d9f",
	"test connection secret (activate form)":  "canary-test-activate-2f4b6d8e0a",
	"test connection secret (crash output)":   "canary-test-crash-3a5c7e9f1b",
	"test connection secret (verify output)":  "canary-test-verify-6d8f0b2c4e",
	"test connection secret (wrong key)":      "canary-test-wrongkey-4b6d8f0a2c",
	"test connection secret (refused)":        "canary-test-refused-5c7e9a1b3d",
}

// canarySource is a connector source whose server and verify command both
// print the secret ECHO_KEY, so only redaction keeps it out of the
// install log and the connector's output.
func canarySource(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\necho \"starting with key $ECHO_KEY\" >&2\nexec " + echoServer(t) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "run.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// exerciseConnectorSecrets types every connector canary into the forms
// that take secrets, as an admin and as a user, with HTMX and without,
// in successful, failing and refused requests. It returns the pages that
// then show those connectors, for the caller to walk.
func exerciseConnectorSecrets(t *testing.T, ts *testServer, admin, user *client) []string {
	t.Helper()
	inputs := []db.CatalogInput{
		{Name: "ECHO_KEY", Title: "Key", Secret: true, Required: true},
		{Name: "ECHO_MODE", Title: "Mode", Default: "loud"},
	}
	verify := &db.VerifySpec{Command: []string{"/bin/sh", "-c", `echo "verify sees $ECHO_KEY"; echo "verify stderr $ECHO_KEY" >&2`}}
	ts.addCatalog(t, db.CatalogEntry{
		Name: "canary-echo", Kind: db.KindLocal, Scope: db.ScopeBoth, Transport: "stdio",
		Command: "./run.sh", Source: canarySource(t), Inputs: inputs, Verify: verify,
	})
	ts.addCatalog(t, db.CatalogEntry{
		Name: "canary-broken", Kind: db.KindLocal, Scope: db.ScopeUser, Transport: "stdio",
		Command: "/nonexistent/canary-command", Source: sourceDir(t), Inputs: inputs,
	})
	ts.addCatalog(t, db.CatalogEntry{
		Name: "canary-admins", Kind: db.KindLocal, Scope: db.ScopeGlobal, Transport: "stdio",
		Command: "./run.sh", Source: canarySource(t), Inputs: inputs,
	})
	c := connectorCanaries
	var pages []string
	finish := func(cl *client, r response, status string) response {
		t.Helper()
		wantStatus(t, r, http.StatusOK)
		id := runIDOf(t, progress(t, r))
		pages = append(pages, fmt.Sprintf("/installs/%d", id))
		final := cl.pollInstall(t, id, installDeadline)
		wantFinished(t, final, status)
		return final
	}
	afterRedirect := func(cl *client, r response) {
		t.Helper()
		wantStatus(t, r, http.StatusSeeOther)
		loc := r.header.Get("Location")
		pages = append(pages, loc)
		var id int64
		if _, err := fmt.Sscanf(loc, "/installs/%d", &id); err != nil {
			t.Fatalf("got Location %q; want an install page", loc)
		}
		cl.pollInstall(t, id, installDeadline)
	}

	// Shared connectors.
	final := finish(admin, admin.htmxPost(t, "/admin/connectors", url.Values{
		"catalog": {"canary-echo"}, "name": {"canary-shared"}, "enable": {"1"}, "secret.ECHO_KEY": {c["shared connector secret"]},
	}), "succeeded")
	if log := final.body; !strings.Contains(log, "verify sees [REDACTED]") {
		t.Errorf("got install log %q; want the verify line with the secret redacted", log)
	}
	wantStatus(t, admin.formPost(t, "/admin/connectors", url.Values{
		"catalog": {"canary-echo"}, "name": {"canary-plain"}, "secret.ECHO_KEY": {c["shared connector secret (plain form)"]},
	}), http.StatusSeeOther)
	for _, h := range []http.Header{htmxReq, jsonReq, nil} {
		r := admin.formPost(t, "/admin/connectors", url.Values{
			"catalog": {"canary-echo"}, "name": {"Not A Name!"}, "secret.ECHO_KEY": {c["shared connector secret (refused)"]},
		}, h)
		wantStatus(t, r, http.StatusBadRequest)
	}
	list := admin.get(t, "/admin/connectors")
	id := row(t, list, "shared-connector-row", "canary-shared").AttrOr("data-connector-id", "")
	if id == "" {
		t.Fatalf("canary-shared is not listed:\n%s", list.body)
	}
	finish(admin, admin.htmxPost(t, "/admin/connectors/"+id+"/settings", url.Values{
		"input.ECHO_MODE": {"quiet"}, "secret.ECHO_KEY": {c["shared connector secret (settings)"]},
	}), "unchanged")
	eventually(t, "the start-up line, redacted, in the output", 10*time.Second, func() (bool, string) {
		out := admin.get(t, "/admin/connectors/"+id+"/output", htmxReq)
		return strings.Contains(out.body, "starting with key [REDACTED]"), out.body
	})
	pages = append(pages, "/admin/connectors", "/admin/connectors/list", "/admin/connectors/"+id+"/settings",
		"/admin/connectors/"+id+"/output", "/admin/connectors/new?catalog=canary-echo")

	// A user's own activations.
	finish(user, user.htmxPost(t, "/connectors", url.Values{
		"catalog": {"canary-echo"}, "name": {"canary-mine"}, "secret.ECHO_KEY": {c["activation secret"]},
	}), "succeeded")
	afterRedirect(user, user.formPost(t, "/connectors", url.Values{
		"catalog": {"canary-echo"}, "name": {"canary-mine-2"}, "secret.ECHO_KEY": {c["activation secret (plain form)"]},
	}))
	failed := finish(user, user.htmxPost(t, "/connectors", url.Values{
		"catalog": {"canary-broken"}, "name": {"canary-broken"}, "secret.ECHO_KEY": {c["activation secret (failed activation)"]},
	}), "failed")
	if !strings.Contains(failed.body, "command not found") {
		t.Errorf("got %q; want command not found", failed.body)
	}
	for _, h := range []http.Header{htmxReq, jsonReq, nil} {
		wantStatus(t, user.formPost(t, "/connectors", url.Values{
			"catalog": {"canary-echo"}, "name": {"canary-mine"}, "secret.ECHO_KEY": {c["activation secret (conflicting name)"]},
		}, h), http.StatusConflict)
		wantStatus(t, user.formPost(t, "/connectors", url.Values{
			"catalog": {"canary-admins"}, "secret.ECHO_KEY": {c["activation secret (shared-only refused)"]},
		}, h), http.StatusBadRequest)
	}

	// Test connection, from both forms: working, crashing with the
	// secret in its output, refused by a remote server, and refused
	// outright. The fragment shows tools or the reason, never the secret.
	ts.addCatalog(t, db.CatalogEntry{
		Name: "canary-crash", Kind: db.KindLocal, Scope: db.ScopeBoth, Transport: "stdio",
		Command: "/bin/sh", Args: []string{"-c", `echo "bad key $ECHO_KEY" >&2; exit 3`}, Source: sourceDir(t), Inputs: inputs,
	})
	ts.addCatalog(t, db.CatalogEntry{
		Name: "canary-badverify", Kind: db.KindLocal, Scope: db.ScopeBoth, Transport: "stdio",
		Command: "./run.sh", Source: canarySource(t), Inputs: inputs,
		Verify: &db.VerifySpec{Command: []string{"/bin/sh", "-c", `echo "verify rejects $ECHO_KEY"; exit 1`}},
	})
	ts.addCatalog(t, db.CatalogEntry{
		Name: "canary-remote", Kind: db.KindRemote, Scope: db.ScopeBoth, Transport: "streamable-http",
		URL:    bearerRemote(t, "streamable-http", "canary-remote-right-key"),
		Inputs: []db.CatalogInput{{Name: "API_KEY", Title: "API key", Secret: true, Required: true, Header: "Authorization", Format: "Bearer {}"}},
	})
	for _, h := range []http.Header{htmxReq, jsonReq, nil} {
		wantStatus(t, admin.formPost(t, "/admin/connectors/test", url.Values{
			"catalog": {"canary-echo"}, "name": {"canary-echo"}, "secret.ECHO_KEY": {c["test connection secret (shared form)"]},
		}, h), http.StatusOK)
		wantStatus(t, admin.formPost(t, "/admin/connectors/test", url.Values{
			"id": {id}, "secret.ECHO_KEY": {c["test connection secret (settings form)"]},
		}, h), http.StatusOK)
		wantStatus(t, user.formPost(t, "/connectors/test", url.Values{
			"catalog": {"canary-echo"}, "name": {"canary-echo"}, "secret.ECHO_KEY": {c["test connection secret (activate form)"]},
		}, h), http.StatusOK)
		crash := user.formPost(t, "/connectors/test", url.Values{
			"catalog": {"canary-crash"}, "secret.ECHO_KEY": {c["test connection secret (crash output)"]},
		}, h)
		wantStatus(t, crash, http.StatusOK)
		if !strings.Contains(crash.body, "exited with code 3: bad key [REDACTED]") {
			t.Errorf("got %q; want the crash output with the secret redacted", crash.body)
		}
		verify := admin.formPost(t, "/admin/connectors/test", url.Values{
			"catalog": {"canary-badverify"}, "secret.ECHO_KEY": {c["test connection secret (verify output)"]},
		}, h)
		wantStatus(t, verify, http.StatusOK)
		if !strings.Contains(verify.body, "verify rejects [REDACTED]") {
			t.Errorf("got %q; want the verify output with the secret redacted", verify.body)
		}
		wrong := admin.formPost(t, "/admin/connectors/test", url.Values{
			"catalog": {"canary-remote"}, "secret.API_KEY": {c["test connection secret (wrong key)"]},
		}, h)
		wantStatus(t, wrong, http.StatusOK)
		if !strings.Contains(wrong.body, "auth failed: HTTP 401") {
			t.Errorf("got %q; want auth failed", wrong.body)
		}
		wantStatus(t, user.formPost(t, "/admin/connectors/test", url.Values{
			"catalog": {"canary-echo"}, "secret.ECHO_KEY": {c["test connection secret (refused)"]},
		}, h), http.StatusForbidden)
		wantStatus(t, user.formPost(t, "/connectors/test", url.Values{
			"catalog": {"canary-admins"}, "secret.ECHO_KEY": {c["test connection secret (refused)"]},
		}, h), http.StatusOK)
	}
	return append(pages, "/connectors", "/connectors/list", "/marketplace")
}
