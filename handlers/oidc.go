package handlers

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"patchbay"
	"patchbay/db"
)

// OIDCConfig configures sign-in with an OpenID Provider.
type OIDCConfig struct {
	Issuer       string
	ClientID     string
	ClientSecret string
	RedirectURL  string
	// HTTPClient talks to the provider; nil means a client with a timeout.
	HTTPClient *http.Client
	Now        func() time.Time
	Rand       io.Reader
}

// flowTTL is how long a started sign-in may take.
const flowTTL = 10 * time.Minute

// maxFlows bounds the in-flight sign-ins kept in memory.
const maxFlows = 10000

// Authenticator runs the authorization code flow with state, nonce and
// PKCE S256, and verifies the ID token's issuer, audience and expiry. The
// provider is discovered on first use, and again after a failure, so a
// provider that is down at start-up does not keep Patchbay from starting.
type Authenticator struct {
	cfg OIDCConfig

	mu       sync.Mutex
	provider *oidc.Provider
	flows    map[string]signInFlow // by state
}

type signInFlow struct {
	browserHash [32]byte // hash of the flow cookie: binds the flow to the browser that began it
	verifier    string
	nonce       string
	next        string
	expires     time.Time
}

// NewAuthenticator returns an Authenticator; it does no network I/O.
func NewAuthenticator(cfg OIDCConfig) *Authenticator {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 15 * time.Second}
	}
	return &Authenticator{cfg: cfg, flows: map[string]signInFlow{}}
}

// Issuer returns the configured issuer URL.
func (a *Authenticator) Issuer() string { return a.cfg.Issuer }

func (a *Authenticator) discover(ctx context.Context) (*oidc.Provider, error) {
	a.mu.Lock()
	p := a.provider
	a.mu.Unlock()
	if p != nil {
		return p, nil
	}
	// Discovery runs without the lock: it is network I/O.
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, a.cfg.HTTPClient), a.cfg.Issuer)
	if err != nil {
		return nil, &patchbay.Error{Code: patchbay.EINTERNAL, Message: "The sign-in provider cannot be reached.", Err: fmt.Errorf("oidc discovery: %w", err)}
	}
	a.mu.Lock()
	if a.provider == nil {
		a.provider = p
	}
	p = a.provider
	a.mu.Unlock()
	return p, nil
}

func (a *Authenticator) oauth2Config(p *oidc.Provider) *oauth2.Config {
	return &oauth2.Config{
		ClientID:     a.cfg.ClientID,
		ClientSecret: a.cfg.ClientSecret,
		RedirectURL:  a.cfg.RedirectURL,
		Endpoint:     p.Endpoint(),
		Scopes:       []string{oidc.ScopeOpenID, "email", "profile"},
	}
}

func (a *Authenticator) random() (string, error) {
	b := make([]byte, 32)
	if _, err := io.ReadFull(a.cfg.Rand, b); err != nil {
		return "", fmt.Errorf("oidc: random: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// Begin starts a sign-in. It returns the provider URL to send the browser
// to and a value for the short-lived flow cookie.
func (a *Authenticator) Begin(ctx context.Context, next string) (authURL, browserKey string, err error) {
	p, err := a.discover(ctx)
	if err != nil {
		return "", "", err
	}
	var state, nonce, key string
	for _, s := range []*string{&state, &nonce, &key} {
		if *s, err = a.random(); err != nil {
			return "", "", err
		}
	}
	verifier := oauth2.GenerateVerifier()
	now := a.cfg.Now()
	a.mu.Lock()
	a.sweepLocked(now)
	if len(a.flows) >= maxFlows {
		a.mu.Unlock()
		return "", "", patchbay.Errorf(patchbay.ERATELIMIT, "Too many sign-ins in progress. Try again shortly.")
	}
	a.flows[state] = signInFlow{browserHash: sha256.Sum256([]byte(key)), verifier: verifier, nonce: nonce, next: next, expires: now.Add(flowTTL)}
	a.mu.Unlock()
	u := a.oauth2Config(p).AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier))
	return u, key, nil
}

func (a *Authenticator) sweepLocked(now time.Time) {
	for k, f := range a.flows {
		if now.After(f.expires) {
			delete(a.flows, k)
		}
	}
}

// errSignInFailed is what the person sees for any failed callback; the
// precise reason is logged, not shown, so the page never helps an attacker.
func errSignInFailed(err error) error {
	return &patchbay.Error{Code: patchbay.EINVALID, Message: "Sign-in did not complete. Please try again.", Err: err}
}

// Finish completes a sign-in from the provider's callback. The flow is
// used up whatever the outcome.
func (a *Authenticator) Finish(ctx context.Context, browserKey, state, code, providerErr string) (db.SignIn, string, error) {
	var in db.SignIn
	if state == "" {
		return in, "", errSignInFailed(errors.New("callback without state"))
	}
	a.mu.Lock()
	f, ok := a.flows[state]
	delete(a.flows, state)
	a.mu.Unlock()
	switch {
	case !ok:
		return in, "", errSignInFailed(errors.New("unknown or used state"))
	case a.cfg.Now().After(f.expires):
		return in, "", errSignInFailed(errors.New("expired flow"))
	case subtle.ConstantTimeCompare(f.browserHash[:], hashOf(browserKey)) != 1:
		return in, "", errSignInFailed(errors.New("flow began in another browser"))
	case providerErr != "":
		return in, "", errSignInFailed(fmt.Errorf("provider returned error %q", providerErr))
	case code == "":
		return in, "", errSignInFailed(errors.New("callback without code"))
	}
	p, err := a.discover(ctx)
	if err != nil {
		return in, "", err
	}
	cctx := oidc.ClientContext(ctx, a.cfg.HTTPClient)
	tok, err := a.oauth2Config(p).Exchange(cctx, code, oauth2.VerifierOption(f.verifier))
	if err != nil {
		return in, "", errSignInFailed(fmt.Errorf("code exchange: %w", err))
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok {
		return in, "", errSignInFailed(errors.New("no id_token in token response"))
	}
	idt, err := p.Verifier(&oidc.Config{ClientID: a.cfg.ClientID, Now: a.cfg.Now}).Verify(cctx, raw)
	if err != nil {
		return in, "", errSignInFailed(fmt.Errorf("id token: %w", err))
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(f.nonce)) != 1 {
		return in, "", errSignInFailed(errors.New("nonce mismatch"))
	}
	var claims struct {
		Email         string `json:"email"`
		EmailVerified *bool  `json:"email_verified"`
		Name          string `json:"name"`
		PreferredName string `json:"preferred_username"`
	}
	if err := idt.Claims(&claims); err != nil {
		return in, "", errSignInFailed(fmt.Errorf("claims: %w", err))
	}
	name := claims.Name
	if name == "" {
		name = claims.PreferredName
	}
	in = db.SignIn{Issuer: idt.Issuer, Subject: idt.Subject, Email: claims.Email, Name: name,
		EmailVerified: claims.EmailVerified != nil && *claims.EmailVerified}
	return in, f.next, nil
}

func hashOf(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}
