package handlers

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"patchbay/db"
	"patchbay/handlers/browsertest"
	"patchbay/mcp/install/installtest"
)

// TestBrowserInstallProgressPolls adds a shared connector in a real
// browser and watches the progress panel replace itself by HTMX polling
// until the install has succeeded, after which the list reloads itself
// to show the connector ready, all without a page load.
func TestBrowserInstallProgressPolls(t *testing.T) {
	t.Parallel()
	ctx := browsertest.NewBrowser(t)
	opts := serverOpts{}
	entry := echoEntry(t, "browser-echo", db.ScopeGlobal, db.CatalogInput{Name: "KEY", Title: "Key", Secret: true, Required: true})
	wantLog := "browser-echo is ready with 3 tools"
	if exec.Command("python3", "-m", "pip", "--version").Run() == nil {
		// The Python connector installs for seconds, so the panel is seen
		// running and polled several times.
		opts.PipArgs = installtest.OfflinePipArgs(installtest.BuildWheel(t, "../testdata/connectors/pypkg"))
		entry = pyEntry(t, db.ScopeGlobal)
		entry.Inputs[0].Name = "KEY"
		wantLog = "Successfully installed tinypkg"
	}
	ts := newTestServer(t, opts)
	ts.addCatalog(t, entry)
	admin := ts.signIn(t, ada)

	// Signed in as the admin by handing the browser the session cookie;
	// the sign-in journey itself is covered in cmd/patchbay.
	httpOnly := true
	if _, err := chromedp.Call(ctx, network.SetCookie, network.SetCookieParams{
		Name: ts.srv.sessionCookieName(), Value: admin.session, URL: ts.URL, HTTPOnly: &httpOnly,
	}); err != nil {
		t.Fatalf("setting the session cookie: %v", err)
	}
	browsertest.Do(t, ctx, "opening the shared connectors", chromedp.Navigate(ts.URL+"/admin/connectors"))
	browsertest.WaitFor(t, ctx, "htmx on the shared connectors page", `document.readyState === "complete" && !!window.htmx && !!document.querySelector("[data-testid=catalog-pick-form]")`, 15*time.Second)
	browsertest.Do(t, ctx, "marking the page", chromedp.Evaluate[chromedp.Void](`window.__samePage = true`))

	browsertest.Do(t, ctx, "choosing the catalog entry", chromedp.Click(chromedp.CSS("[data-testid=catalog-pick-submit]")))
	browsertest.WaitFor(t, ctx, "the add form in the panel", `!!document.querySelector("#connector-panel [data-testid=connector-form]")`, 15*time.Second)
	browsertest.Do(t, ctx, "typing the secret", chromedp.SendKeys(chromedp.CSS(`input[name="secret.KEY"]`), "browser-secret-value"))
	browsertest.Do(t, ctx, "adding the connector", chromedp.Click(chromedp.CSS("[data-testid=connector-form-submit]")))

	browsertest.WaitFor(t, ctx, "the progress panel", `!!document.querySelector("#connector-panel [data-testid=install-progress]")`, 15*time.Second)
	// Record every status the panel shows, and how many panels (one per
	// poll) replaced the first, until it stops polling.
	browsertest.Do(t, ctx, "watching the panel", chromedp.Evaluate[chromedp.Void](`
		window.__statuses = [];
		window.__swaps = 0;
		const seen = () => {
			const p = document.querySelector("#connector-panel [data-testid=install-progress]");
			if (p && window.__statuses[window.__statuses.length - 1] !== p.dataset.status) window.__statuses.push(p.dataset.status);
		};
		seen();
		document.body.addEventListener("htmx:afterSwap", (e) => {
			if (e.detail.target && e.detail.target.dataset && e.detail.target.dataset.testid === "install-progress") window.__swaps++;
			seen();
		});
		new MutationObserver(seen).observe(document.getElementById("connector-panel"), {subtree: true, childList: true, attributes: true});
	`))
	browsertest.WaitFor(t, ctx, "the install to succeed", `document.querySelector("#connector-panel [data-testid=install-progress]").dataset.status === "succeeded"`, 2*time.Minute)

	statuses := browsertest.Eval[[]string](t, ctx, `window.__statuses`)
	if len(statuses) == 0 || statuses[len(statuses)-1] != "succeeded" {
		t.Errorf("got statuses %q; want them to end with succeeded", statuses)
	}
	if strings.Contains(wantLog, "tinypkg") && (len(statuses) < 2 || statuses[0] != "running") {
		t.Errorf("got statuses %q; want running first, then succeeded", statuses)
	}
	log := browsertest.Eval[string](t, ctx, `document.querySelector("#connector-panel [data-testid=install-log]").textContent`)
	if !strings.Contains(log, wantLog) {
		t.Errorf("got log %q; want %q", log, wantLog)
	}
	if browsertest.Eval[bool](t, ctx, `document.querySelector("#connector-panel [data-testid=install-progress]").hasAttribute("hx-trigger")`) {
		t.Error("the finished panel still has hx-trigger; want polling stopped")
	}
	browsertest.WaitFor(t, ctx, "the list to show the connector ready", fmt.Sprintf(
		`!!document.querySelector('#shared-connectors [data-connector=%q] [data-phase="ready"]')`, entry.Name), 15*time.Second)
	if !browsertest.Eval[bool](t, ctx, `window.__samePage === true`) {
		t.Error("the page was reloaded; want only HTMX swaps")
	}
	if got := browsertest.Eval[string](t, ctx, `document.body.innerHTML`); strings.Contains(got, "browser-secret-value") {
		t.Error("the page shows the secret that was typed; want it gone with the form")
	}
	t.Logf("statuses seen: %q; polled swaps: %d", statuses, browsertest.Eval[int](t, ctx, `window.__swaps`))
}
