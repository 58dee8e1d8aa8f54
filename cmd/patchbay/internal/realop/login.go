package realop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

// pollInterval is how often Login looks at the page while the browser moves
// between the provider's pages.
const pollInterval = 25 * time.Millisecond

// maxSteps bounds the pages Login handles (login, consent, and slack), so a
// provider that loops fails the test rather than running into the timeout.
const maxSteps = 5

// pageState is what Login reads from the current document. The provider's
// pages name themselves with <body data-op-page="...">, so Login does not
// depend on their wording.
type pageState struct {
	Stale bool   `json:"stale"` // the document Login already acted on
	Ready bool   `json:"ready"` // parsed far enough to have its elements
	Href  string `json:"href"`
	Page  string `json:"page"`  // "login", "consent", "error", ...; "" elsewhere
	Error string `json:"error"` // text of #op-error, if any
}

const readState = `(() => ({
	stale: window.__realopStale === true,
	ready: document.readyState !== "loading",
	href: location.href,
	page: (document.body && document.body.dataset.opPage) || "",
	error: ((document.getElementById("op-error") || {}).textContent || "").trim(),
}))()`

// markStale tags the current document just before Login submits a form on
// it, so that the next state read can tell the old page from the next one:
// a new document does not have the tag.
var markStale = chromedp.Evaluate[chromedp.Void](`window.__realopStale = true`)

// Login signs the test account in on the provider's pages, in the tab of
// ctx (a chromedp context, e.g. from browsertest.NewBrowser). Call it once the
// browser is on its way to, or on, the provider's login page, typically
// right after navigating to the relying party's sign-in URL.
//
// It fills in Username and Password, submits, and approves the consent page
// when the provider shows one. It returns nil once the browser has left the
// provider, i.e. is on the relying party's redirect URI (or wherever that
// redirected to); the caller then waits for its own page. It returns an error
// when the provider rejects the login, shows an error page, or ctx ends.
func (op *OP) Login(ctx context.Context) error {
	submitted := false
	for range maxSteps {
		st, err := op.nextPage(ctx, !submitted)
		if err != nil {
			return err
		}
		switch {
		case !op.onOP(st.Href):
			return nil
		case st.Page == "login" && submitted:
			return fmt.Errorf("realop: the provider rejected the login of %q: %s", op.Username, st.Error)
		case st.Page == "login":
			if err := chromedp.Do(ctx,
				chromedp.Clear(chromedp.ID("op-username")),
				chromedp.SendKeys(chromedp.ID("op-username"), op.Username),
				chromedp.SendKeys(chromedp.ID("op-password"), op.Password),
				markStale,
				chromedp.Click(chromedp.ID("op-submit")),
			); err != nil {
				return fmt.Errorf("realop: filling in the login page: %w", err)
			}
			submitted = true
		case st.Page == "consent":
			if err := chromedp.Do(ctx,
				markStale,
				chromedp.Click(chromedp.ID("op-approve")),
			); err != nil {
				return fmt.Errorf("realop: approving consent: %w", err)
			}
		case st.Page == "error":
			return fmt.Errorf("realop: the provider shows an error at %s: %s", st.Href, st.Error)
		default:
			return fmt.Errorf("realop: unexpected provider page %q at %s", st.Page, st.Href)
		}
	}
	return fmt.Errorf("realop: still on the provider after %d pages", maxSteps)
}

// onOP reports whether href is one of the provider's pages.
func (op *OP) onOP(href string) bool {
	return strings.HasPrefix(href, op.Issuer+"/")
}

// nextPage waits for a document that Login has not acted on yet and that has
// been parsed. With wantOP it also waits until that document is the
// provider's, because the caller may have started the navigation there
// without waiting for it (e.g. by clicking a "Sign in" button).
//
// It polls rather than waits for load events: one submit runs through several
// redirects across two servers, and a page that is mid-navigation simply
// answers again on the next tick. Errors while reading are mostly such
// navigations, so they are retried until ctx ends, and the last one is
// reported then.
func (op *OP) nextPage(ctx context.Context, wantOP bool) (pageState, error) {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var (
		last    pageState
		lastErr error
	)
	for {
		st, err := chromedp.Run(ctx, chromedp.Evaluate[pageState](readState))
		switch {
		case errors.Is(err, chromedp.ErrInvalidContext):
			return st, fmt.Errorf("realop: Login needs a chromedp context: %w", err)
		case err != nil:
			lastErr = err
		case !st.Stale && st.Ready && (!wantOP || op.onOP(st.Href)):
			return st, nil
		default:
			last, lastErr = st, nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			where := last.Href
			if where == "" {
				where = "an unknown page"
			}
			if lastErr != nil {
				return last, fmt.Errorf("realop: waiting for the provider's next page, last at %s (last error: %v): %w", where, lastErr, ctx.Err())
			}
			return last, fmt.Errorf("realop: waiting for the provider's next page, still at %s: %w", where, ctx.Err())
		}
	}
}
