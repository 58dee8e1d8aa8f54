// Package browsertest starts the headless Chromium that Patchbay's browser tests
// drive through chromedp.
//
// It is for tests only, but it is a normal package so that tests in several
// packages can share it.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// DefaultExecPath is where Debian's chromium package installs the browser.
// CI installs it with `apt-get install -y chromium`.
const DefaultExecPath = "/usr/bin/chromium"

// Timeout bounds everything a test does with the context NewBrowser returns.
// It is generous because CI machines are small (2 cores) and a sign-in runs
// several page loads through two servers.
const Timeout = 2 * time.Minute

// ExecPath returns the Chromium binary the tests use: $CHROME_PATH when set,
// otherwise DefaultExecPath.
func ExecPath() string {
	if p := os.Getenv("CHROME_PATH"); p != "" {
		return p
	}
	return DefaultExecPath
}

// Available reports whether the Chromium binary of ExecPath exists and is
// executable. It returns nil when it is.
func Available() error {
	p := ExecPath()
	if _, err := exec.LookPath(p); err != nil {
		return fmt.Errorf("browsertest: no chromium at %s (install Debian's chromium package or set CHROME_PATH): %w", p, err)
	}
	return nil
}

// Require skips the test when Chromium is missing on a developer machine, and
// fails it in CI (CI is set), where a skip would hide that the browser tests
// never ran.
func Require(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv("CI") == "" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
}

// NewBrowser starts a headless Chromium with a fresh profile and returns a
// chromedp context for one tab in it. The context expires after Timeout; the
// browser is stopped and its profile removed in t.Cleanup.
//
// Chromium is started here, before the timeout is applied, because chromedp
// ties the browser's life to the context of the first Run: starting it with
// the timeout context would kill it when the timeout ends rather than only
// failing the action that ran over.
func NewBrowser(t testing.TB) context.Context {
	t.Helper()
	Require(t)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(ExecPath()),
		chromedp.Headless,
		// Tests run as root, and Chromium refuses to sandbox as root.
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		// Chromium's background traffic (component updates, sync, QUIC
		// probes to Google) goes to hosts this network refuses; the
		// refusals made page loads fail here, so all of it is off.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		// No UserDataDir option on purpose: chromedp then makes a fresh
		// temporary profile for this browser, and on exit kills Chromium's
		// leftover child processes before it removes the directory, which
		// t.TempDir would not do.
	)
	allocCtx, allocCancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	// Cleanups run last-in first-out, so this one, registered before the
	// timeout's, stops the browser after the timeout context is released.
	// allocCancel waits for the browser process to exit.
	t.Cleanup(func() {
		cancel()
		allocCancel()
	})

	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("browsertest: starting chromium %s: %v", ExecPath(), err)
	}

	tctx, tcancel := context.WithTimeout(ctx, Timeout)
	t.Cleanup(tcancel)
	return tctx
}
