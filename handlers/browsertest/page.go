package browsertest

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// pollEvery is how often WaitFor looks at the page again.
const pollEvery = 25 * time.Millisecond

// WaitFor polls predicate, a JavaScript expression, in the tab of ctx until
// it is true. Evaluation errors (a page mid-navigation) are retried. After
// timeout it fails the test with where the tab is and what it shows.
func WaitFor(t testing.TB, ctx context.Context, what, predicate string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var lastErr error
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+predicate+")"))
		if err == nil && ok {
			return
		}
		if err != nil {
			lastErr = err
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			href, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`))
			text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
			t.Fatalf("waiting for %s: still not there after %v (last error %v); page %s shows:\n%s", what, timeout, lastErr, href, text)
		}
		time.Sleep(pollEvery)
	}
}

// Do runs steps in the tab and fails the test on error.
func Do(t testing.TB, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Eval evaluates a JavaScript expression (awaiting a promise) in the tab.
func Eval[T any](t testing.TB, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}
