package realop_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"patchbay/cmd/patchbay/internal/realop"
	"patchbay/handlers/browsertest"
)

// TestSignIn runs the whole authorization code flow through the real
// provider and a real browser: a minimal relying party redirects to the
// provider, Login signs in and consents, and the relying party's callback
// exchanges the code (with the PKCE verifier), verifies the ID token and
// shows the email.
func TestSignIn(t *testing.T) {
	realop.Require(t)
	ctx := browsertest.NewBrowser(t)
	rp := newTestRP(t)
	op := realop.Start(t, rp.callbackURL())
	rp.connect(t, op)

	if err := chromedp.Do(ctx, chromedp.Navigate(rp.srv.URL+"/login")); err != nil {
		t.Fatalf("navigate to the RP's login: %v", err)
	}
	if err := op.Login(ctx); err != nil {
		t.Fatal(err)
	}
	email, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("email")))
	if err != nil {
		body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("reading the email on the RP's page: %v; page text: %q", err, body)
	}
	if email != op.Email {
		t.Errorf("page shows email %q, want %q", email, op.Email)
	}

	res := rp.result(t)
	if res.sentNonce == "" || res.tokenNonce != res.sentNonce {
		t.Errorf("ID token nonce %q, sent %q", res.tokenNonce, res.sentNonce)
	}
	if res.subject != op.Subject {
		t.Errorf("ID token sub = %q, want %q", res.subject, op.Subject)
	}
	if res.name != op.Name || !res.emailVerified {
		t.Errorf("ID token name = %q, email_verified = %v; want %q, true", res.name, res.emailVerified, op.Name)
	}
}

// TestWrongPassword checks that the provider really checks the password, so
// that a passing sign-in test means the right credentials were typed.
func TestWrongPassword(t *testing.T) {
	realop.Require(t)
	ctx := browsertest.NewBrowser(t)
	rp := newTestRP(t)
	op := realop.Start(t, rp.callbackURL())
	rp.connect(t, op)

	if err := chromedp.Do(ctx, chromedp.Navigate(rp.srv.URL+"/login")); err != nil {
		t.Fatalf("navigate to the RP's login: %v", err)
	}
	wrong := *op
	wrong.Password = "not-" + op.Password
	err := wrong.Login(ctx)
	if err == nil || !strings.Contains(err.Error(), "rejected") {
		t.Fatalf("Login with a wrong password = %v, want a rejection", err)
	}
}

// testRP is a minimal relying party in the style Patchbay uses: go-oidc for
// discovery and ID token verification, x/oauth2 for the code exchange, with
// state (bound to a cookie), nonce and PKCE S256.
type testRP struct {
	srv *httptest.Server

	// Set by connect, before the browser makes any request.
	issuer   string
	oauth    oauth2.Config
	verifier *oidc.IDTokenVerifier

	mu      sync.Mutex
	pending map[string]authRequest // by state
	results chan rpResult
}

type authRequest struct{ nonce, pkceVerifier string }

type rpResult struct {
	subject, name string
	emailVerified bool
	// The nonce the RP put in the authorization request and the one in
	// the verified ID token. The callback rejects a mismatch itself; the
	// test checks them again so that a broken check cannot pass silently.
	sentNonce, tokenNonce string
}

func newTestRP(t *testing.T) *testRP {
	rp := &testRP{pending: map[string]authRequest{}, results: make(chan rpResult, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", rp.login)
	mux.HandleFunc("GET /callback", rp.callback)
	rp.srv = httptest.NewServer(mux)
	t.Cleanup(rp.srv.Close)
	return rp
}

func (rp *testRP) callbackURL() string { return rp.srv.URL + "/callback" }

func (rp *testRP) connect(t *testing.T, op *realop.OP) {
	// t.Context is canceled before cleanups run; the key set only uses it
	// for its HTTP client.
	provider, err := oidc.NewProvider(t.Context(), op.Issuer)
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	rp.issuer = op.Issuer
	rp.oauth = oauth2.Config{
		ClientID:     op.ClientID,
		ClientSecret: op.ClientSecret,
		Endpoint:     provider.Endpoint(),
		RedirectURL:  rp.callbackURL(),
		Scopes:       []string{oidc.ScopeOpenID, "email", "profile"},
	}
	rp.verifier = provider.Verifier(&oidc.Config{ClientID: op.ClientID})
}

func (rp *testRP) result(t *testing.T) rpResult {
	select {
	case r := <-rp.results:
		return r
	default:
		t.Fatal("the RP's callback recorded no sign-in")
		return rpResult{}
	}
}

func (rp *testRP) login(w http.ResponseWriter, r *http.Request) {
	state, nonce, pkce := randomString(), randomString(), oauth2.GenerateVerifier()
	rp.mu.Lock()
	rp.pending[state] = authRequest{nonce: nonce, pkceVerifier: pkce}
	rp.mu.Unlock()
	// The cookie binds the state to this browser, as a real RP must.
	http.SetCookie(w, &http.Cookie{Name: "rp_state", Value: state, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, rp.oauth.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(pkce)), http.StatusFound)
}

func (rp *testRP) callback(w http.ResponseWriter, r *http.Request) {
	res, email, err := rp.finish(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	select {
	case rp.results <- res:
	default:
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<!DOCTYPE html><title>Signed in</title><p>Signed in as <span id=\"email\">%s</span></p>", html.EscapeString(email))
}

func (rp *testRP) finish(r *http.Request) (rpResult, string, error) {
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		return rpResult{}, "", fmt.Errorf("provider returned %s: %s", e, q.Get("error_description"))
	}
	state := q.Get("state")
	c, err := r.Cookie("rp_state")
	if err != nil || c.Value != state {
		return rpResult{}, "", fmt.Errorf("state does not match this browser's cookie")
	}
	// RFC 9207: the provider names itself in the response (mix-up defence).
	if iss := q.Get("iss"); iss != rp.issuer {
		return rpResult{}, "", fmt.Errorf("iss = %q, want %q", iss, rp.issuer)
	}
	rp.mu.Lock()
	req, ok := rp.pending[state]
	delete(rp.pending, state)
	rp.mu.Unlock()
	if !ok {
		return rpResult{}, "", fmt.Errorf("unknown state")
	}

	tok, err := rp.oauth.Exchange(r.Context(), q.Get("code"), oauth2.VerifierOption(req.pkceVerifier))
	if err != nil {
		return rpResult{}, "", fmt.Errorf("code exchange: %w", err)
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok {
		return rpResult{}, "", fmt.Errorf("token response has no id_token")
	}
	idt, err := rp.verifier.Verify(r.Context(), raw)
	if err != nil {
		return rpResult{}, "", fmt.Errorf("verify ID token: %w", err)
	}
	if idt.Nonce != req.nonce {
		return rpResult{}, "", fmt.Errorf("ID token nonce %q, want %q", idt.Nonce, req.nonce)
	}
	var claims struct {
		Email         string `json:"email"`
		EmailVerified bool   `json:"email_verified"`
		Name          string `json:"name"`
	}
	if err := idt.Claims(&claims); err != nil {
		return rpResult{}, "", err
	}
	return rpResult{
		subject:       idt.Subject,
		name:          claims.Name,
		emailVerified: claims.EmailVerified,
		sentNonce:     req.nonce,
		tokenNonce:    idt.Nonce,
	}, claims.Email, nil
}

func randomString() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
