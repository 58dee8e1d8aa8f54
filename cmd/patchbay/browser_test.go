package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"patchbay/cmd/patchbay/internal/realop"
	"patchbay/handlers/browsertest"
)

// waitTimeout bounds one wait for a page state; browsertest.Timeout bounds the
// whole test.
const waitTimeout = 15 * time.Second

// Predicates on the page, for waitFor.
const (
	onSignInPage = `location.pathname === "/signin" && !!document.querySelector("[data-testid=sign-in]")`
	onConnectors = `location.pathname === "/connectors" && !!document.querySelector("[data-testid=connectors-empty]")`
	// htmx is loaded with defer and processes the page once it has loaded;
	// until then a form would be posted the old way.
	htmxReady = `document.readyState === "complete" && !!window.htmx`
)

// waitFor polls predicate, a JavaScript expression, in the tab of ctx until
// it is true. Evaluation errors (a page mid-navigation) are retried. On
// timeout it fails the test with where the tab is and what it shows.
func waitFor(t *testing.T, ctx context.Context, what, predicate string) {
	t.Helper()
	waitForWithin(t, ctx, what, predicate, waitTimeout)
}

// waitForWithin is waitFor with its own deadline, for waits on real work
// such as a dependency install.
func waitForWithin(t *testing.T, ctx context.Context, what, predicate string, timeout time.Duration) {
	t.Helper()
	browsertest.WaitFor(t, ctx, what, predicate, timeout)
}

// do runs steps in the tab and fails the test on error.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	browsertest.Do(t, ctx, what, steps...)
}

// eval evaluates a JavaScript expression (awaiting a promise) in the tab.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	return browsertest.Eval[T](t, ctx, expr)
}

// text returns the trimmed text content of the first element matching css.
func text(t *testing.T, ctx context.Context, css string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(css)))
	if err != nil {
		t.Fatalf("reading %s: %v", css, err)
	}
	return strings.TrimSpace(s)
}

// present reports whether an element matches css right now.
func present(t *testing.T, ctx context.Context, css string) bool {
	t.Helper()
	return eval[bool](t, ctx, fmt.Sprintf("!!document.querySelector(%q)", css))
}

// newPersonTab opens a tab in a browser context of its own (its own cookie
// jar), as a second person on another machine would have.
func newPersonTab(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	tab, cancel := chromedp.NewContext(ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("opening a tab in a new browser context: %v", err)
	}
	return tab
}

// devSignIn signs the tab in through the development identity provider as
// the person shown as name, starting on /signin, and waits for /connectors.
func devSignIn(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	waitFor(t, ctx, "the sign-in page", onSignInPage)
	do(t, ctx, "clicking Sign in", chromedp.Click(chromedp.CSS("[data-testid=sign-in-link]")))
	waitFor(t, ctx, "the development sign-in picker", `location.pathname === "/dev-idp/authorize" && !!document.querySelector(".devidp-person-button")`)
	person := chromedp.Search(fmt.Sprintf(`//button[contains(@class, "devidp-person-button")][.//span[@class="devidp-person-name"][normalize-space()=%q]]`, name))
	do(t, ctx, "choosing "+name, chromedp.Click(person))
	waitFor(t, ctx, "the connectors page after signing in as "+name, onConnectors)
}

// acceptDialogs accepts every JavaScript dialog the tab opens (hx-confirm
// asks with window.confirm) and sends its message on the returned channel.
// A dialog blocks the click that opened it, so this runs on its own
// goroutine; it ends with the tab's context.
func acceptDialogs(t *testing.T, ctx context.Context) <-chan string {
	t.Helper()
	msgs := make(chan string, 16)
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			_, err := chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
			if err != nil {
				msgs <- "handling the dialog failed: " + err.Error()
				continue
			}
			msgs <- ev.Message
		}
	}()
	return msgs
}

// nextDialog returns the message of the next dialog acceptDialogs saw.
func nextDialog(t *testing.T, msgs <-chan string) string {
	t.Helper()
	select {
	case m := <-msgs:
		return m
	case <-time.After(waitTimeout):
		t.Fatalf("no confirmation dialog after %v", waitTimeout)
		return ""
	}
}

// sessionCookie returns the tab's Patchbay session cookie for baseURL.
func sessionCookie(t *testing.T, ctx context.Context, baseURL string) *network.Cookie {
	t.Helper()
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{baseURL}})
	if err != nil {
		t.Fatalf("reading cookies: %v", err)
	}
	for _, c := range res.Cookies {
		if c.Name == "patchbay_session" {
			return c
		}
	}
	return nil
}

// markPage tags the current document; noFullReload reports whether the tag
// survived, i.e. only parts of the page were swapped since.
const (
	markPage     = `window.__e2eSameDocument = true`
	noFullReload = `window.__e2eSameDocument === true`
)

// TestBrowserDevSignInJourney walks an admin through the portal with the
// development identity provider: sign-in, the token panel (HTMX), the
// people page, and sign-out, with a second person in another browser.
func TestBrowserDevSignInJourney(t *testing.T) {
	ctx := browsertest.NewBrowser(t)
	pb := startPatchbay(t, nil)
	dialogs := acceptDialogs(t, ctx)

	do(t, ctx, "opening /connectors signed out", chromedp.Navigate(pb.URL+"/connectors"))
	waitFor(t, ctx, "the redirect to sign-in", onSignInPage)
	if got := eval[string](t, ctx, `location.search`); got != "?next=%2Fconnectors" {
		t.Errorf("sign-in page query: got %q; want ?next=%%2Fconnectors", got)
	}
	if !present(t, ctx, "[data-testid=dev-banner]") {
		t.Errorf("the development banner is missing on the development sign-in page")
	}

	devSignIn(t, ctx, "Ada Admin")
	if got := text(t, ctx, "[data-testid=viewer-name]"); got != "Ada Admin" {
		t.Errorf("signed in as %q; want Ada Admin", got)
	}
	if got := text(t, ctx, "[data-testid=viewer-role]"); got != "admin" {
		t.Errorf("role badge %q; want admin", got)
	}
	for _, nav := range []string{"nav-connectors", "nav-users", "nav-tokens", "nav-support", "nav-marketplace"} {
		if !present(t, ctx, "[data-testid="+nav+"]") {
			t.Errorf("admin nav has no %s", nav)
		}
	}

	var secret string
	t.Run("a token is created in the HTMX panel and shown once", func(t *testing.T) {
		do(t, ctx, "opening /tokens", chromedp.Navigate(pb.URL+"/tokens"))
		waitFor(t, ctx, "the tokens page", htmxReady+` && !!document.querySelector("[data-testid=tokens-empty]")`)
		eval[bool](t, ctx, markPage)
		do(t, ctx, "creating a token",
			chromedp.SendKeys(chromedp.ID("new-token-name"), "ci-script"),
			chromedp.Click(chromedp.CSS("[data-testid=token-create-form] button[type=submit]")),
		)
		waitFor(t, ctx, "the one-time token box", `!!document.querySelector("[data-testid=new-token-secret]")`)
		var err error
		secret, err = chromedp.Run(ctx, chromedp.Value(chromedp.CSS("[data-testid=new-token-secret]")))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(secret, "pbt_") {
			t.Fatalf("one-time box shows %q; want a pbt_ token", secret)
		}
		if !eval[bool](t, ctx, noFullReload) {
			t.Errorf("creating a token reloaded the whole page; want only the panel swapped")
		}
		if got := text(t, ctx, "[data-testid=token-row] [data-testid=token-name]"); got != "ci-script" {
			t.Errorf("token row name %q; want ci-script", got)
		}
		if status, me := getMe(t, pb.URL, "Authorization: Bearer "+secret); status != http.StatusOK || me.Email != "ada@example.test" {
			t.Errorf("GET /api/me with the new token: got %d %q; want 200 ada@example.test", status, me.Email)
		}
		// The secret lives only in the one-time box's input, not in the
		// page's text (the curl example uses $PATCHBAY_TOKEN).
		if strings.Contains(eval[string](t, ctx, `document.body.innerText`), secret) {
			t.Errorf("the token appears in the page text outside its input")
		}
	})

	t.Run("revoking asks first, then the row disappears and the token stops working", func(t *testing.T) {
		if secret == "" {
			t.Skip("no token was created")
		}
		do(t, ctx, "clicking Revoke", chromedp.Click(chromedp.CSS("[data-testid=token-revoke]")))
		if msg := nextDialog(t, dialogs); !strings.Contains(msg, "Revoke token ci-script?") {
			t.Errorf("confirmation asks %q; want it to name the token", msg)
		}
		waitFor(t, ctx, "the empty token list", `!document.querySelector("[data-testid=token-row]") && !!document.querySelector("[data-testid=tokens-empty]")`)
		if present(t, ctx, "[data-testid=new-token-secret]") {
			t.Errorf("the one-time box is still shown after revoking")
		}
		if !eval[bool](t, ctx, noFullReload) {
			t.Errorf("revoking reloaded the whole page; want only the panel swapped")
		}
		if status, _ := getMe(t, pb.URL, "Authorization: Bearer "+secret); status != http.StatusUnauthorized {
			t.Errorf("GET /api/me with the revoked token: got %d; want 401", status)
		}
	})

	// Uma signs in once, in her own browser context, so she is on the list.
	uma := newPersonTab(t, ctx)
	do(t, uma, "Uma opens Patchbay", chromedp.Navigate(pb.URL+"/signin"))
	devSignIn(t, uma, "Uma User")
	if present(t, uma, "[data-testid=nav-users]") || present(t, uma, "[data-testid=nav-support]") {
		t.Errorf("Uma (role user) sees the Users or Support nav")
	}

	do(t, ctx, "opening /users", chromedp.Navigate(pb.URL+"/users"))
	waitFor(t, ctx, "the users page", htmxReady+` && !!document.querySelector("[data-testid=users-table]")`)
	umaID := eval[string](t, ctx, `(() => {
		const row = [...document.querySelectorAll("[data-testid=user-row]")]
			.find(r => r.querySelector("[data-testid=user-email]").textContent.trim() === "uma@example.test");
		return row ? row.dataset.userId : "";
	})()`)
	if _, err := strconv.Atoi(umaID); err != nil {
		t.Fatalf("Uma's row on /users: got id %q; want a number", umaID)
	}
	umaRow := fmt.Sprintf("tr[data-user-id=%q]", umaID)
	eval[bool](t, ctx, markPage)

	t.Run("an admin changes a role and it applies to the open session", func(t *testing.T) {
		do(t, ctx, "choosing support for Uma",
			chromedp.SetValue(chromedp.CSS(umaRow+" [data-testid=user-role-select]"), "support"),
			chromedp.Click(chromedp.CSS(umaRow+" [data-testid=user-role-form] button[type=submit]")),
		)
		waitFor(t, ctx, "the role-changed notice", `(document.querySelector("[data-testid=flash]") || {}).textContent === "Role changed to support."`)
		if got := eval[string](t, ctx, fmt.Sprintf(`document.querySelector(%q).value`, umaRow+" [data-testid=user-role-select]")); got != "support" {
			t.Errorf("Uma's role select after saving: got %q; want support", got)
		}
		if !eval[bool](t, ctx, noFullReload) {
			t.Errorf("saving the role reloaded the whole page; want only the table swapped")
		}
		do(t, uma, "Uma reloads", chromedp.Navigate(pb.URL+"/connectors"))
		waitFor(t, uma, "Uma's connectors page", onConnectors)
		if got := text(t, uma, "[data-testid=viewer-role]"); got != "support" {
			t.Errorf("Uma's role badge: got %q; want support", got)
		}
		if !present(t, uma, "[data-testid=nav-support]") {
			t.Errorf("Uma, now support, has no Support nav")
		}
	})

	t.Run("disabling asks first and ends the person's session", func(t *testing.T) {
		do(t, ctx, "clicking Disable", chromedp.Click(chromedp.CSS(umaRow+" [data-testid=user-disable]")))
		if msg := nextDialog(t, dialogs); !strings.Contains(msg, "Disable Uma User?") {
			t.Errorf("confirmation asks %q; want it to name Uma", msg)
		}
		waitFor(t, ctx, "Uma shown as disabled", fmt.Sprintf(`(document.querySelector(%q) || {}).textContent === "Disabled"`, umaRow+" [data-testid=user-status]"))
		if got := text(t, ctx, "[data-testid=flash]"); !strings.Contains(got, "User disabled") {
			t.Errorf("notice after disabling: got %q; want it to say the user is disabled", got)
		}
		do(t, uma, "Uma reloads", chromedp.Navigate(pb.URL+"/connectors"))
		waitFor(t, uma, "Uma sent to sign-in", onSignInPage)
	})

	t.Run("signing out ends the session", func(t *testing.T) {
		do(t, ctx, "clicking Sign out", chromedp.Click(chromedp.CSS("[data-testid=sign-out-form] button[type=submit]")))
		waitFor(t, ctx, "the sign-in page after signing out", onSignInPage)
		do(t, ctx, "opening /connectors again", chromedp.Navigate(pb.URL+"/connectors"))
		waitFor(t, ctx, "the redirect to sign-in", onSignInPage)
		if present(t, ctx, "[data-testid=viewer]") {
			t.Errorf("the header still shows a signed-in viewer")
		}
	})
}

// TestBrowserForbiddenPageForAPersonWithoutTheCapability: a person with the
// user role gets 403 for the people page, its HTMX partial, its JSON twin
// and its actions, and the page says plainly that it is not allowed.
func TestBrowserForbiddenPageForAPersonWithoutTheCapability(t *testing.T) {
	ctx := browsertest.NewBrowser(t)
	pb := startPatchbay(t, nil)
	do(t, ctx, "opening the sign-in page", chromedp.Navigate(pb.URL+"/signin"))
	devSignIn(t, ctx, "Uma User")

	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(pb.URL+"/users"))
	if err != nil {
		t.Fatalf("opening /users: %v", err)
	}
	if resp.Status != http.StatusForbidden {
		t.Errorf("GET /users as Uma: got %d; want 403", resp.Status)
	}
	waitFor(t, ctx, "the error page", `!!document.querySelector("[data-testid=error-page]")`)
	if got := text(t, ctx, "[data-testid=error-title]"); got != "Not allowed" {
		t.Errorf("error title %q; want Not allowed", got)
	}
	if got := text(t, ctx, "[data-testid=error-status]"); got != "Error 403" {
		t.Errorf("error status %q; want Error 403", got)
	}
	if present(t, ctx, "[data-testid=users-table]") {
		t.Errorf("the 403 page shows the users table")
	}

	// The page keeps the header, so it holds the session's CSRF token:
	// the POST below fails for want of the capability, not of the token.
	csrf := eval[string](t, ctx, `JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRF-Token"] || ""`)
	if csrf == "" {
		t.Fatalf("no CSRF token on the page")
	}
	for _, tc := range []struct{ name, fetch string }{
		{"HTMX partial", `fetch("/users", {headers: {"HX-Request": "true"}})`},
		{"JSON API", `fetch("/api/users")`},
		{"role change", fmt.Sprintf(`fetch("/users/1/role", {method: "POST", headers: {"X-CSRF-Token": %q, "Content-Type": "application/x-www-form-urlencoded"}, body: "role=admin"})`, csrf)},
	} {
		if got := eval[int](t, ctx, tc.fetch+`.then(r => r.status)`); got != http.StatusForbidden {
			t.Errorf("%s as Uma: got %d; want 403", tc.name, got)
		}
	}
	var me apiMe
	if err := json.Unmarshal([]byte(eval[string](t, ctx, `fetch("/api/me").then(r => r.text())`)), &me); err != nil || me.Role != "user" {
		t.Errorf("Uma's role after the refused change: got %q (%v); want user", me.Role, err)
	}
}

// TestBrowserRealOpenIDProviderSignIn signs in through a real OpenID
// Provider (node oidc-provider) as Patchbay would in production: no
// development sign-in anywhere, the admin list grants admin, and each
// sign-in gets a fresh session.
func TestBrowserRealOpenIDProviderSignIn(t *testing.T) {
	ctx := browsertest.NewBrowser(t)
	pb, op := startWithRealOP(t)

	do(t, ctx, "opening /connectors signed out", chromedp.Navigate(pb.URL+"/connectors"))
	waitFor(t, ctx, "the redirect to sign-in", onSignInPage)
	if present(t, ctx, "[data-testid=dev-banner]") || present(t, ctx, "[data-testid=sign-in-dev-note]") {
		t.Errorf("the sign-in page shows the development sign-in with a real issuer")
	}
	do(t, ctx, "clicking Sign in", chromedp.Click(chromedp.CSS("[data-testid=sign-in-link]")))
	if err := op.Login(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the connectors page after signing in", onConnectors)
	if got := text(t, ctx, "[data-testid=viewer-name]"); got != op.Name {
		t.Errorf("signed in as %q; want %q", got, op.Name)
	}
	if got := text(t, ctx, "[data-testid=viewer-role]"); got != "admin" {
		t.Errorf("role badge %q; want admin (from --admin-emails)", got)
	}
	if !present(t, ctx, "[data-testid=nav-users]") {
		t.Errorf("the admin has no Users nav")
	}
	if present(t, ctx, "[data-testid=dev-banner]") {
		t.Errorf("the development banner is shown with a real issuer")
	}
	first := sessionCookie(t, ctx, pb.URL)
	if first == nil || !first.HTTPOnly || first.SameSite != network.CookieSameSiteLax {
		t.Fatalf("session cookie after sign-in: got %+v; want an HttpOnly, SameSite=Lax cookie", first)
	}

	do(t, ctx, "clicking Sign out", chromedp.Click(chromedp.CSS("[data-testid=sign-out-form] button[type=submit]")))
	waitFor(t, ctx, "the sign-in page after signing out", onSignInPage)
	if c := sessionCookie(t, ctx, pb.URL); c != nil {
		t.Errorf("session cookie after signing out: got %q; want none", c.Value)
	}
	if status, _ := getMe(t, pb.URL, "Cookie: patchbay_session="+first.Value); status != http.StatusUnauthorized {
		t.Errorf("GET /api/me with the signed-out session: got %d; want 401 (ended server-side)", status)
	}

	// The provider may remember the person and send the browser straight
	// back; sign in on its pages only if it shows them.
	do(t, ctx, "clicking Sign in again", chromedp.Click(chromedp.CSS("[data-testid=sign-in-link]")))
	waitFor(t, ctx, "the provider or the connectors page", fmt.Sprintf(`(%s) || (location.origin === %q && !!document.body && !!document.body.dataset.opPage)`, onConnectors, op.Issuer))
	if eval[bool](t, ctx, fmt.Sprintf(`location.origin === %q`, op.Issuer)) {
		if err := op.Login(ctx); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "the connectors page after signing in again", onConnectors)
	}
	second := sessionCookie(t, ctx, pb.URL)
	if second == nil || second.Value == first.Value {
		t.Fatalf("session after signing in again: got %v; want a new session", second)
	}
	status, me := getMe(t, pb.URL, "Cookie: patchbay_session="+second.Value)
	if status != http.StatusOK || me.Email != op.Email || me.Via != "session" || me.Role != "admin" {
		t.Errorf("GET /api/me with the new session: got %d %+v; want 200, %s, admin, via session", status, me, op.Email)
	}
	resp, body := get(t, pb.URL+"/api/users", "Cookie: patchbay_session="+second.Value)
	var list struct {
		Users []struct{ Email string } `json:"users"`
	}
	if err := json.Unmarshal([]byte(body), &list); resp.StatusCode != http.StatusOK || err != nil || len(list.Users) != 1 {
		t.Errorf("GET /api/users: got %d with %d users (%v); want 200 with the one user signed in twice", resp.StatusCode, len(list.Users), err)
	}
	if strings.Contains(pb.logs.String(), op.ClientSecret) {
		t.Errorf("the logs contain the OIDC client secret")
	}
}

// startWithRealOP starts a real OpenID Provider and a Patchbay that signs in
// with it. The provider needs Patchbay's callback URL when it starts, and
// Patchbay needs the provider's issuer when it starts, so Patchbay's port
// is chosen first: a free port is picked, the provider is told about it,
// and Patchbay listens on it. Another process may take the port in between,
// so this tries a few times.
func startWithRealOP(t *testing.T) (*instance, *realop.OP) {
	t.Helper()
	var lastErr error
	for range 3 {
		addr := "127.0.0.1:" + freePort(t)
		op := realop.Start(t, "http://"+addr+"/auth/callback")
		pb, err := tryStartPatchbay(t,
			// The client secret goes through the environment, not argv.
			map[string]string{"PATCHBAY_OIDC_CLIENT_SECRET": op.ClientSecret},
			"--addr", addr, "--oidc-issuer", op.Issuer, "--oidc-client-id", op.ClientID, "--admin-emails", op.Email)
		if err == nil {
			return pb, op
		}
		if !strings.Contains(err.Error(), "listen") {
			t.Fatalf("starting patchbay with the real provider: %v", err)
		}
		lastErr = err
	}
	t.Fatalf("no free port for patchbay after 3 tries: %v", lastErr)
	return nil, nil
}
