package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"patchbay/handlers/browsertest"
)

// installTimeout bounds a wait on a real install (npm ci) seen in the page.
const installTimeout = 90 * time.Second

// screenshot saves the tab as PNG into $PATCHBAY_SCREENSHOTS, when set,
// for a person reviewing the pages; tests assert on the DOM, not on it.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("PATCHBAY_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
}

// An admin adds the sample node connector as a shared one and watches its
// npm install stream into the page; a user then sees it, activates their
// own copy from the marketplace and deactivates it again.
func TestBrowserConnectorJourney(t *testing.T) {
	browsertest.Require(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	mustRunPatchbay(t, nil, "catalog", "add", "--data-dir", dataDir, "--dir", "../../testdata/connectors/nodeserver")
	pb := startPatchbay(t, nil, "--data-dir", dataDir)

	admin := browsertest.NewBrowser(t)
	acceptDialogs(t, admin)
	do(t, admin, "opening /signin", chromedp.Navigate(pb.URL+"/signin"))
	devSignIn(t, admin, "Ada Admin")
	user := newPersonTab(t, admin)
	userDialogs := acceptDialogs(t, user)
	do(t, user, "opening /signin", chromedp.Navigate(pb.URL+"/signin"))
	devSignIn(t, user, "Uma User")

	t.Run("the admin adds a shared connector and watches it install", func(t *testing.T) {
		do(t, admin, "opening shared connectors", chromedp.Click(chromedp.CSS("[data-testid=nav-shared-connectors]")))
		waitFor(t, admin, "the shared connectors page", htmxReady+` && !!document.querySelector("[data-testid=catalog-pick]")`)
		do(t, admin, "choosing nodesearch",
			chromedp.SetValue(chromedp.CSS("[data-testid=catalog-pick]"), "nodesearch"),
			chromedp.Click(chromedp.CSS("[data-testid=catalog-pick-submit]")))
		waitFor(t, admin, "the connector form", `!!document.querySelector("[data-testid=connector-form-submit]")`)
		do(t, admin, "adding it", chromedp.Click(chromedp.CSS("[data-testid=connector-form-submit]")))
		waitFor(t, admin, "the install panel", `!!document.querySelector("[data-testid=install-progress]")`)
		screenshot(t, admin, "1-installing")
		waitForWithin(t, admin, "the install to succeed", `(document.querySelector("[data-testid=install-status]")||{}).textContent?.trim().toLowerCase().includes("succeeded")`, installTimeout)
		log := text(t, admin, "[data-testid=install-log]")
		for _, want := range []string{"npm ci --omit=dev", "nodesearch is ready with 1 tool"} {
			if !strings.Contains(log, want) {
				t.Errorf("install log in the page lacks %q:\n%s", want, log)
			}
		}
		row := `[data-testid=shared-connector-row][data-connector=nodesearch]`
		waitFor(t, admin, "the list to show nodesearch ready", `document.querySelector("`+row+` [data-testid=connector-status]")?.dataset.phase === "ready"`)
		if got := text(t, admin, row+" [data-testid=connector-tools]"); !strings.Contains(got, "search") {
			t.Errorf("tools column: %q", got)
		}
		do(t, admin, "granting it to everyone",
			chromedp.Click(chromedp.CSS(row+" details.grant-add summary")),
			chromedp.SetValue(chromedp.CSS(row+" [data-testid=grant-kind]"), "everyone"),
			chromedp.Click(chromedp.CSS(row+" [data-testid=grant-submit]")))
		waitFor(t, admin, "the everyone grant", `[...document.querySelectorAll("`+row+` [data-testid=grant-label]")].some(e => e.textContent.includes("Everyone"))`)
		screenshot(t, admin, "2-shared-ready")
	})

	t.Run("the user sees it and activates their own copy", func(t *testing.T) {
		do(t, user, "opening /connectors", chromedp.Navigate(pb.URL+"/connectors"))
		waitFor(t, user, "the shared connector on the user's page", `document.querySelector("[data-testid=connector-row][data-connector=nodesearch] [data-testid=connector-status]")?.dataset.phase === "ready"`)
		do(t, user, "opening the marketplace", chromedp.Navigate(pb.URL+"/marketplace"))
		waitFor(t, user, "the activate form", htmxReady+` && !!document.querySelector("[data-testid=activate-form]")`)
		do(t, user, "activating it as mysearch",
			chromedp.SetValue(chromedp.CSS("[data-testid=activate-form] input[name=name]"), "mysearch"),
			chromedp.Click(chromedp.CSS("[data-testid=activate-submit]")))
		waitForWithin(t, user, "the activation to succeed", `(document.querySelector("[data-testid=install-status]")||{}).textContent?.trim().toLowerCase().includes("succeeded")`, installTimeout)
		screenshot(t, user, "3-activated")
		do(t, user, "opening /connectors", chromedp.Navigate(pb.URL+"/connectors"))
		mine := `[data-testid=connector-row][data-connector=mysearch]`
		waitFor(t, user, "mysearch ready", `document.querySelector("`+mine+` [data-testid=connector-status]")?.dataset.phase === "ready"`)
		screenshot(t, user, "4-my-connectors")
		do(t, user, "deactivating mysearch", chromedp.Click(chromedp.CSS(mine+" [data-testid=connector-deactivate]")))
		if msg := nextDialog(t, userDialogs); !strings.Contains(msg, "mysearch") {
			t.Errorf("confirmation %q does not name the connector", msg)
		}
		waitFor(t, user, "mysearch gone", `!document.querySelector("`+mine+`")`)
	})
}
