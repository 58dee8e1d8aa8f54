package handlers

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"patchbay/db"
	"patchbay/handlers/browsertest"
)

// TestBrowserTestConnection clicks Test connection in the add form and
// in a marketplace activate form of a real browser: the outcome appears
// in the form's result area, the form is not submitted (nothing is
// added or activated, the panel keeps the form) and the typed secret is
// not shown back.
func TestBrowserTestConnection(t *testing.T) {
	t.Parallel()
	const key, wrong = "browser-remote-key-1234", "browser-wrong-key-5678"
	endpoint := bearerRemote(t, "streamable-http", key)
	ctx := browsertest.NewBrowser(t)
	ts := newTestServer(t, serverOpts{})
	ts.addCatalog(t, remoteEntry("remote-search", db.ScopeBoth, "streamable-http", endpoint))
	admin := ts.signIn(t, ada)
	httpOnly := true
	if _, err := chromedp.Call(ctx, network.SetCookie, network.SetCookieParams{
		Name: ts.srv.sessionCookieName(), Value: admin.session, URL: ts.URL, HTTPOnly: &httpOnly,
	}); err != nil {
		t.Fatalf("setting the session cookie: %v", err)
	}
	result := func(area string) string {
		return browsertest.Eval[string](t, ctx, `document.querySelector("#`+area+` [data-testid=test-connection-result]").textContent`)
	}
	try := func(what, area, secret, want string) {
		t.Helper()
		browsertest.Do(t, ctx, "typing the key for "+what, chromedp.SetValue(chromedp.CSS(`form:has(#`+area+`) input[name="secret.API_KEY"]`), secret))
		browsertest.Do(t, ctx, "clearing the result area", chromedp.Evaluate[chromedp.Void](`document.getElementById("`+area+`").replaceChildren()`))
		browsertest.Do(t, ctx, "clicking Test connection for "+what, chromedp.Click(chromedp.CSS(`form:has(#`+area+`) [data-testid=test-connection]`)))
		browsertest.WaitFor(t, ctx, "the result of "+what, `!!document.querySelector("#`+area+` [data-testid=test-connection-result]")`, 30*time.Second)
		if got := strings.Join(strings.Fields(result(area)), " "); !strings.Contains(got, want) {
			t.Errorf("%s: got %q; want %q", what, got, want)
		}
		if body := browsertest.Eval[string](t, ctx, `document.getElementById("`+area+`").innerHTML`); strings.Contains(body, secret) {
			t.Errorf("%s: the result shows the typed key", what)
		}
	}

	browsertest.Do(t, ctx, "opening the add form", chromedp.Navigate(ts.URL+"/admin/connectors/new?catalog=remote-search"))
	browsertest.WaitFor(t, ctx, "htmx on the add form", `document.readyState === "complete" && !!window.htmx && !!document.querySelector("[data-testid=connector-form]")`, 15*time.Second)
	browsertest.Do(t, ctx, "marking the page", chromedp.Evaluate[chromedp.Void](`window.__samePage = true`))
	try("the right key", "connector-test-result", key, "Connected: 2 tools: fetch, search")
	try("a wrong key", "connector-test-result", wrong, "auth failed: HTTP 401 from "+endpoint)
	if !browsertest.Eval[bool](t, ctx, `window.__samePage === true && !!document.querySelector("[data-testid=connector-form]")`) {
		t.Error("the form was submitted or the page reloaded; want only the result swapped in")
	}

	browsertest.Do(t, ctx, "opening the marketplace", chromedp.Navigate(ts.URL+"/marketplace"))
	browsertest.WaitFor(t, ctx, "htmx on the marketplace", `document.readyState === "complete" && !!window.htmx && !!document.querySelector("[data-testid=activate-form]")`, 15*time.Second)
	try("an activation's key", "activate-remote-search-test-result", key, "Connected: 2 tools: fetch, search")

	bg := context.Background()
	if gs, _ := ts.db.GlobalServers(bg); len(gs) != 0 {
		t.Errorf("got shared connectors %+v; want none added by testing", gs)
	}
	if rows, _ := ts.db.UserServers(bg, ts.user(t, ada).ID); len(rows) != 0 {
		t.Errorf("got activations %+v; want none", rows)
	}
}
