package devidp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	"golang.org/x/oauth2"
)

const (
	testClientID     = "patchbay-dev"
	testClientSecret = "s3cret: with/odd+chars&"
	mountPath        = "/dev-idp"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// testEnv is an httptest server with the provider mounted under /dev-idp
// (behind http.StripPrefix, as Patchbay mounts it) and a go-oidc relying
// party configured against it.
type testEnv struct {
	srv         *httptest.Server
	idp         *Provider
	clock       *fakeClock
	issuer      string
	redirectURI string
	otherURI    string
	browser     *http.Client // does not follow redirects
	provider    *oidc.Provider
	oauth       *oauth2.Config
}

func newEnv(t *testing.T, mutate func(*Config)) *testEnv {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	env := &testEnv{
		srv:         srv,
		clock:       &fakeClock{t: time.Now()},
		issuer:      srv.URL + mountPath,
		redirectURI: srv.URL + "/auth/callback",
		otherURI:    srv.URL + "/auth/other-callback",
		browser: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}},
	}
	cfg := Config{
		Issuer:       env.issuer,
		ClientID:     testClientID,
		ClientSecret: testClientSecret,
		RedirectURIs: []string{env.redirectURI, env.otherURI},
		People:       DefaultPeople(),
		Now:          env.clock.Now,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	idp, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	env.idp = idp
	mux.Handle(mountPath+"/", http.StripPrefix(mountPath, idp))
	mux.HandleFunc("/auth/callback", func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("test browser must not follow the redirect to the callback")
	})

	env.provider, err = oidc.NewProvider(context.Background(), env.issuer)
	if err != nil {
		t.Fatalf("oidc.NewProvider: %v", err)
	}
	env.oauth = &oauth2.Config{
		ClientID:     testClientID,
		ClientSecret: testClientSecret,
		Endpoint:     env.provider.Endpoint(),
		RedirectURL:  env.redirectURI,
		Scopes:       []string{oidc.ScopeOpenID, "email", "profile"},
	}
	return env
}

func (e *testEnv) get(t *testing.T, u string) *http.Response {
	t.Helper()
	resp, err := e.browser.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func (e *testEnv) postForm(t *testing.T, u string, form url.Values) *http.Response {
	t.Helper()
	resp, err := e.browser.PostForm(u, form)
	if err != nil {
		t.Fatalf("POST %s: %v", u, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func parseHTML(t *testing.T, resp *http.Response) *goquery.Document {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("Content-Type = %q, want text/html", ct)
	}
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	if err != nil {
		t.Fatalf("parsing HTML: %v", err)
	}
	return doc
}

// pickerForm loads the picker for authURL and returns the form that signs in
// as subject, with its resolved action URL and field values.
func (e *testEnv) pickerForm(t *testing.T, authURL, subject string) (string, url.Values) {
	t.Helper()
	resp := e.get(t, authURL)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET authorize: status %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	doc := parseHTML(t, resp)
	form := doc.Find("form").FilterFunction(func(_ int, s *goquery.Selection) bool {
		v, _ := s.Find(`input[name="subject"]`).Attr("value")
		return v == subject
	})
	if form.Length() != 1 {
		t.Fatalf("found %d picker forms for subject %q", form.Length(), subject)
	}
	if m, _ := form.Attr("method"); !strings.EqualFold(m, "post") {
		t.Fatalf("picker form method = %q, want post", m)
	}
	action, _ := form.Attr("action")
	target, err := resp.Request.URL.Parse(action)
	if err != nil {
		t.Fatalf("resolving form action %q: %v", action, err)
	}
	values := url.Values{}
	form.Find("input").Each(func(_ int, s *goquery.Selection) {
		name, _ := s.Attr("name")
		value, _ := s.Attr("value")
		values.Add(name, value)
	})
	return target.String(), values
}

// signIn runs the browser side of the flow: authorize, pick subject, and
// return the redirect back to the client.
func (e *testEnv) signIn(t *testing.T, authURL, subject string) *url.URL {
	t.Helper()
	action, values := e.pickerForm(t, authURL, subject)
	resp := e.postForm(t, action, values)
	if resp.StatusCode != http.StatusFound {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST authorize: status %d, body %s", resp.StatusCode, body)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatalf("bad Location: %v", err)
	}
	return loc
}

// code runs the browser side and returns the authorization code.
func (e *testEnv) code(t *testing.T, verifier string) string {
	t.Helper()
	loc := e.signIn(t, e.oauth.AuthCodeURL("st", oidc.Nonce("n0nce"), oauth2.S256ChallengeOption(verifier)), "dev-user")
	code := loc.Query().Get("code")
	if code == "" {
		t.Fatalf("no code in redirect %s", loc)
	}
	return code
}

// redirectError asserts resp is a redirect to the registered redirect URI
// carrying the given OAuth error code and returns its query.
func (e *testEnv) redirectError(t *testing.T, resp *http.Response, wantErr string) url.Values {
	t.Helper()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("status = %d, want 302", resp.StatusCode)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatalf("bad Location: %v", err)
	}
	if got := loc.Scheme + "://" + loc.Host + loc.Path; got != e.redirectURI {
		t.Fatalf("redirected to %s, want %s", got, e.redirectURI)
	}
	q := loc.Query()
	if q.Get("error") != wantErr {
		t.Fatalf("error = %q (%q), want %q", q.Get("error"), q.Get("error_description"), wantErr)
	}
	if q.Get("code") != "" {
		t.Fatalf("error redirect carries a code")
	}
	return q
}

func wantRetrieveError(t *testing.T, err error, code string, status int) {
	t.Helper()
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		t.Fatalf("error = %v, want *oauth2.RetrieveError", err)
	}
	if re.ErrorCode != code || re.Response.StatusCode != status {
		t.Fatalf("got %s (%q) status %d, want %s status %d", re.ErrorCode, re.ErrorDescription, re.Response.StatusCode, code, status)
	}
	if ct := re.Response.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error Content-Type = %q", ct)
	}
}

const verifierA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

func TestDiscovery(t *testing.T) {
	env := newEnv(t, nil)
	ep := env.provider.Endpoint()
	if ep.AuthURL != env.issuer+"/authorize" || ep.TokenURL != env.issuer+"/token" {
		t.Fatalf("endpoint = %+v", ep)
	}
	if got := env.provider.UserInfoEndpoint(); got != env.issuer+"/userinfo" {
		t.Fatalf("userinfo endpoint = %q", got)
	}
	var md struct {
		Issuer           string   `json:"issuer"`
		JWKSURI          string   `json:"jwks_uri"`
		ResponseTypes    []string `json:"response_types_supported"`
		SubjectTypes     []string `json:"subject_types_supported"`
		Algs             []string `json:"id_token_signing_alg_values_supported"`
		ChallengeMethods []string `json:"code_challenge_methods_supported"`
		AuthMethods      []string `json:"token_endpoint_auth_methods_supported"`
		Scopes           []string `json:"scopes_supported"`
		GrantTypes       []string `json:"grant_types_supported"`
	}
	if err := env.provider.Claims(&md); err != nil {
		t.Fatal(err)
	}
	eq := func(name string, got, want []string) {
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if md.Issuer != env.issuer || md.JWKSURI != env.issuer+"/jwks" {
		t.Errorf("issuer/jwks_uri = %q / %q", md.Issuer, md.JWKSURI)
	}
	eq("response_types_supported", md.ResponseTypes, []string{"code"})
	eq("subject_types_supported", md.SubjectTypes, []string{"public"})
	eq("id_token_signing_alg_values_supported", md.Algs, []string{"RS256"})
	eq("code_challenge_methods_supported", md.ChallengeMethods, []string{"S256"})
	eq("token_endpoint_auth_methods_supported", md.AuthMethods, []string{"client_secret_basic", "client_secret_post"})
	eq("scopes_supported", md.Scopes, []string{"openid", "email", "profile"})
	eq("grant_types_supported", md.GrantTypes, []string{"authorization_code"})

	// The JWKS holds exactly the signing key, identified by kid.
	resp := env.get(t, md.JWKSURI)
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	if len(set.Keys) != 1 || set.Keys[0].KeyID == "" || set.Keys[0].Algorithm != "RS256" || !set.Keys[0].IsPublic() {
		t.Fatalf("jwks = %+v", set.Keys)
	}

	// Unknown paths and wrong methods.
	if resp := env.get(t, env.issuer+"/nope"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown path status = %d", resp.StatusCode)
	}
	if resp := env.get(t, env.issuer+"/token"); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /token status = %d", resp.StatusCode)
	}
}

func TestFullFlow(t *testing.T) {
	env := newEnv(t, nil)
	ctx := context.Background()
	verifier := oauth2.GenerateVerifier()
	const state, nonce = "state-123", "nonce-456"

	authURL := env.oauth.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier))
	loc := env.signIn(t, authURL, "dev-admin")
	if got := loc.Scheme + "://" + loc.Host + loc.Path; got != env.redirectURI {
		t.Fatalf("redirected to %s", got)
	}
	q := loc.Query()
	if q.Get("state") != state {
		t.Fatalf("state = %q", q.Get("state"))
	}
	if q.Get("iss") != env.issuer {
		t.Fatalf("iss = %q", q.Get("iss"))
	}

	tok, err := env.oauth.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("Exchange: %v", err)
	}
	if tok.TokenType != "Bearer" || tok.AccessToken == "" || tok.Expiry.IsZero() {
		t.Fatalf("token = %+v", tok)
	}
	if got := tok.Extra("scope"); got != "openid email profile" {
		t.Fatalf("scope = %v", got)
	}
	rawID, ok := tok.Extra("id_token").(string)
	if !ok {
		t.Fatal("no id_token in token response")
	}

	idt, err := env.provider.Verifier(&oidc.Config{ClientID: testClientID}).Verify(ctx, rawID)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if idt.Nonce != nonce {
		t.Fatalf("nonce = %q, want %q", idt.Nonce, nonce)
	}
	if idt.Subject != "dev-admin" || idt.Issuer != env.issuer || len(idt.Audience) != 1 || idt.Audience[0] != testClientID {
		t.Fatalf("id token = sub %q iss %q aud %v", idt.Subject, idt.Issuer, idt.Audience)
	}
	if d := idt.Expiry.Sub(idt.IssuedAt); d != 5*time.Minute {
		t.Fatalf("exp - iat = %v", d)
	}
	if err := idt.VerifyAccessToken(tok.AccessToken); err != nil {
		t.Fatalf("at_hash: %v", err)
	}
	var claims struct {
		Email         string `json:"email"`
		EmailVerified bool   `json:"email_verified"`
		Name          string `json:"name"`
	}
	if err := idt.Claims(&claims); err != nil {
		t.Fatal(err)
	}
	if claims.Email != "ada@example.test" || !claims.EmailVerified || claims.Name != "Ada Admin" {
		t.Fatalf("claims = %+v", claims)
	}

	// The ID token's kid names the key in the JWKS.
	jws, err := jose.ParseSigned(rawID, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatal(err)
	}
	if kid := jws.Signatures[0].Header.KeyID; kid == "" || kid != env.idp.kid {
		t.Fatalf("kid = %q, want %q", kid, env.idp.kid)
	}

	ui, err := env.provider.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		t.Fatalf("UserInfo: %v", err)
	}
	var uiClaims struct {
		Name string `json:"name"`
	}
	if err := ui.Claims(&uiClaims); err != nil {
		t.Fatal(err)
	}
	if ui.Subject != "dev-admin" || ui.Email != "ada@example.test" || !ui.EmailVerified || uiClaims.Name != "Ada Admin" {
		t.Fatalf("userinfo = %+v name %q", ui, uiClaims.Name)
	}
}

// TestTokenResponseRaw checks the wire format of a token response obtained
// with client_secret_post.
func TestTokenResponseRaw(t *testing.T) {
	env := newEnv(t, nil)
	code := env.code(t, verifierA)
	resp := env.postForm(t, env.issuer+"/token", url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {code},
		"redirect_uri":  {env.redirectURI},
		"code_verifier": {verifierA},
		"client_id":     {testClientID},
		"client_secret": {testClientSecret},
	})
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control = %q", cc)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"access_token", "token_type", "expires_in", "id_token", "scope"} {
		if _, ok := body[k]; !ok {
			t.Errorf("token response lacks %s: %v", k, body)
		}
	}
	if body["token_type"] != "Bearer" {
		t.Errorf("token_type = %v", body["token_type"])
	}
}

func TestClientAuthMethods(t *testing.T) {
	for _, tc := range []struct {
		name  string
		style oauth2.AuthStyle
	}{
		{"client_secret_basic", oauth2.AuthStyleInHeader},
		{"client_secret_post", oauth2.AuthStyleInParams},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t, nil)
			env.oauth.Endpoint.AuthStyle = tc.style
			code := env.code(t, verifierA)
			if _, err := env.oauth.Exchange(context.Background(), code, oauth2.VerifierOption(verifierA)); err != nil {
				t.Fatalf("Exchange: %v", err)
			}
		})
	}
	t.Run("both_methods_rejected", func(t *testing.T) {
		env := newEnv(t, nil)
		code := env.code(t, verifierA)
		req, _ := http.NewRequest(http.MethodPost, env.issuer+"/token", strings.NewReader(url.Values{
			"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {env.redirectURI},
			"code_verifier": {verifierA}, "client_id": {testClientID}, "client_secret": {testClientSecret},
		}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(url.QueryEscape(testClientID), url.QueryEscape(testClientSecret))
		resp, err := env.browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("status = %d", resp.StatusCode)
		}
	})
}

func TestFailures(t *testing.T) {
	ctx := context.Background()

	t.Run("wrong_redirect_uri_shows_error_page", func(t *testing.T) {
		env := newEnv(t, nil)
		evil := "https://evil.example/steal"
		cfg := *env.oauth
		cfg.RedirectURL = evil
		resp := env.get(t, cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(verifierA)))
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("status = %d, want 400", resp.StatusCode)
		}
		if loc := resp.Header.Get("Location"); loc != "" {
			t.Fatalf("redirected to %q", loc)
		}
		doc := parseHTML(t, resp)
		if !strings.Contains(doc.Find("h1").Text(), "cannot continue") {
			t.Fatalf("not an error page: %q", doc.Find("h1").Text())
		}
		if doc.Find(`a[href*="evil.example"], form[action*="evil.example"], meta[http-equiv]`).Length() != 0 {
			t.Fatal("error page links to the unvalidated redirect_uri")
		}
		if doc.Find(`input[name="request_id"]`).Length() != 0 {
			t.Fatal("error page offers the picker")
		}
	})

	t.Run("redirect_uri_prefix_is_not_enough", func(t *testing.T) {
		env := newEnv(t, nil)
		cfg := *env.oauth
		cfg.RedirectURL = env.redirectURI + "/../x"
		resp := env.get(t, cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(verifierA)))
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
			t.Fatalf("status = %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
		}
	})

	t.Run("unknown_client_shows_error_page", func(t *testing.T) {
		env := newEnv(t, nil)
		cfg := *env.oauth
		cfg.ClientID = "someone-else"
		resp := env.get(t, cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(verifierA)))
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
			t.Fatalf("status = %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
		}
	})

	t.Run("missing_code_challenge_rejected", func(t *testing.T) {
		env := newEnv(t, nil)
		resp := env.get(t, env.oauth.AuthCodeURL("st-1", oidc.Nonce("n")))
		q := env.redirectError(t, resp, "invalid_request")
		if q.Get("state") != "st-1" {
			t.Fatalf("state = %q", q.Get("state"))
		}
	})

	t.Run("plain_code_challenge_method_rejected", func(t *testing.T) {
		env := newEnv(t, nil)
		resp := env.get(t, env.oauth.AuthCodeURL("st",
			oauth2.SetAuthURLParam("code_challenge", verifierA[:43]),
			oauth2.SetAuthURLParam("code_challenge_method", "plain")))
		env.redirectError(t, resp, "invalid_request")
	})

	t.Run("missing_openid_scope_rejected", func(t *testing.T) {
		env := newEnv(t, nil)
		cfg := *env.oauth
		cfg.Scopes = []string{"email"}
		resp := env.get(t, cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(verifierA)))
		env.redirectError(t, resp, "invalid_scope")
	})

	t.Run("unsupported_response_type_rejected", func(t *testing.T) {
		env := newEnv(t, nil)
		resp := env.get(t, env.oauth.AuthCodeURL("st", oauth2.S256ChallengeOption(verifierA),
			oauth2.SetAuthURLParam("response_type", "token")))
		env.redirectError(t, resp, "unsupported_response_type")
	})

	t.Run("prompt_none_login_required", func(t *testing.T) {
		env := newEnv(t, nil)
		resp := env.get(t, env.oauth.AuthCodeURL("st", oauth2.S256ChallengeOption(verifierA),
			oauth2.SetAuthURLParam("prompt", "none")))
		env.redirectError(t, resp, "login_required")
	})

	t.Run("user_cancels_access_denied", func(t *testing.T) {
		env := newEnv(t, nil)
		action, values := env.pickerForm(t, env.oauth.AuthCodeURL("st-c", oauth2.S256ChallengeOption(verifierA)), "dev-user")
		resp := env.postForm(t, action, url.Values{"request_id": values["request_id"], "deny": {"1"}})
		if q := env.redirectError(t, resp, "access_denied"); q.Get("state") != "st-c" {
			t.Fatalf("state = %q", q.Get("state"))
		}
	})

	t.Run("wrong_pkce_verifier", func(t *testing.T) {
		env := newEnv(t, nil)
		code := env.code(t, verifierA)
		_, err := env.oauth.Exchange(ctx, code, oauth2.VerifierOption(oauth2.GenerateVerifier()))
		wantRetrieveError(t, err, "invalid_grant", http.StatusBadRequest)
	})

	t.Run("missing_pkce_verifier", func(t *testing.T) {
		env := newEnv(t, nil)
		code := env.code(t, verifierA)
		_, err := env.oauth.Exchange(ctx, code)
		wantRetrieveError(t, err, "invalid_grant", http.StatusBadRequest)
	})

	t.Run("code_reused", func(t *testing.T) {
		env := newEnv(t, nil)
		code := env.code(t, verifierA)
		tok, err := env.oauth.Exchange(ctx, code, oauth2.VerifierOption(verifierA))
		if err != nil {
			t.Fatalf("first Exchange: %v", err)
		}
		_, err = env.oauth.Exchange(ctx, code, oauth2.VerifierOption(verifierA))
		wantRetrieveError(t, err, "invalid_grant", http.StatusBadRequest)
		// The replay revokes the access token issued for the code.
		if _, err := env.provider.UserInfo(ctx, oauth2.StaticTokenSource(tok)); err == nil {
			t.Fatal("access token still valid after code replay")
		}
	})

	t.Run("expired_code", func(t *testing.T) {
		env := newEnv(t, nil)
		code := env.code(t, verifierA)
		env.clock.Advance(61 * time.Second)
		_, err := env.oauth.Exchange(ctx, code, oauth2.VerifierOption(verifierA))
		wantRetrieveError(t, err, "invalid_grant", http.StatusBadRequest)
	})

	t.Run("redirect_uri_mismatch_at_token", func(t *testing.T) {
		env := newEnv(t, nil)
		code := env.code(t, verifierA)
		cfg := *env.oauth
		cfg.RedirectURL = env.otherURI // registered, but not the one authorized
		_, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(verifierA))
		wantRetrieveError(t, err, "invalid_grant", http.StatusBadRequest)
	})

	t.Run("wrong_client_secret", func(t *testing.T) {
		env := newEnv(t, nil)
		code := env.code(t, verifierA)
		for _, style := range []oauth2.AuthStyle{oauth2.AuthStyleAutoDetect, oauth2.AuthStyleInHeader, oauth2.AuthStyleInParams} {
			cfg := *env.oauth
			cfg.ClientSecret = "wrong"
			cfg.Endpoint.AuthStyle = style
			_, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(verifierA))
			wantRetrieveError(t, err, "invalid_client", http.StatusUnauthorized)
		}
		// Failed client authentication does not consume the code.
		if _, err := env.oauth.Exchange(ctx, code, oauth2.VerifierOption(verifierA)); err != nil {
			t.Fatalf("Exchange with the right secret: %v", err)
		}
	})

	t.Run("unknown_request_id", func(t *testing.T) {
		env := newEnv(t, nil)
		resp := env.postForm(t, env.issuer+"/authorize", url.Values{"request_id": {"bogus"}, "subject": {"dev-admin"}})
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
			t.Fatalf("status = %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		parseHTML(t, resp)
	})

	t.Run("request_id_single_use", func(t *testing.T) {
		env := newEnv(t, nil)
		action, values := env.pickerForm(t, env.oauth.AuthCodeURL("st", oauth2.S256ChallengeOption(verifierA)), "dev-user")
		if resp := env.postForm(t, action, values); resp.StatusCode != http.StatusFound {
			t.Fatalf("first POST status = %d", resp.StatusCode)
		}
		if resp := env.postForm(t, action, values); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("second POST status = %d, want 400", resp.StatusCode)
		}
	})

	t.Run("expired_request_id", func(t *testing.T) {
		env := newEnv(t, nil)
		action, values := env.pickerForm(t, env.oauth.AuthCodeURL("st", oauth2.S256ChallengeOption(verifierA)), "dev-user")
		env.clock.Advance(10*time.Minute + time.Second)
		if resp := env.postForm(t, action, values); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("status = %d, want 400", resp.StatusCode)
		}
	})

	t.Run("unknown_subject", func(t *testing.T) {
		env := newEnv(t, nil)
		action, values := env.pickerForm(t, env.oauth.AuthCodeURL("st", oauth2.S256ChallengeOption(verifierA)), "dev-user")
		values.Set("subject", "root")
		if resp := env.postForm(t, action, values); resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
			t.Fatalf("status = %d, want 400 without redirect", resp.StatusCode)
		}
	})

	t.Run("userinfo_without_valid_token", func(t *testing.T) {
		env := newEnv(t, nil)
		resp := env.get(t, env.issuer+"/userinfo")
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
			t.Fatalf("no token: status = %d", resp.StatusCode)
		}
		_, err := env.provider.UserInfo(ctx, oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "bogus", TokenType: "Bearer"}))
		if err == nil || !strings.Contains(err.Error(), "401") {
			t.Fatalf("bogus token: err = %v", err)
		}
	})
}

func TestPickerPage(t *testing.T) {
	const evilName = `<script>alert("x")</script>`
	env := newEnv(t, func(c *Config) {
		c.People = append(DefaultPeople(), Person{Subject: "dev-evil", Email: `e@example.test"><img src=x>`, Name: evilName, Role: "user"})
		c.StylesheetURL = "/static/app.css"
	})
	resp := env.get(t, env.oauth.AuthCodeURL("st", oauth2.S256ChallengeOption(verifierA)))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status = %d", resp.StatusCode)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("escapes_person_name", func(t *testing.T) {
		if strings.Contains(string(raw), "<script") || strings.Contains(string(raw), "<img") {
			t.Fatal("raw HTML contains an unescaped tag from person data")
		}
		if doc.Find("script, img").Length() != 0 {
			t.Fatal("person data produced elements")
		}
		names := doc.Find(".devidp-person-name").Map(func(_ int, s *goquery.Selection) string { return s.Text() })
		if len(names) != 4 || names[3] != evilName {
			t.Fatalf("names = %q", names)
		}
	})

	t.Run("banner_and_buttons", func(t *testing.T) {
		if !strings.Contains(doc.Find(".devidp-banner").Text(), "Development sign-in — not for production") {
			t.Fatal("missing development banner")
		}
		forms := doc.Find("form.devidp-person-form")
		if forms.Length() != 4 {
			t.Fatalf("forms = %d, want one per person", forms.Length())
		}
		forms.Each(func(_ int, f *goquery.Selection) {
			if f.Find(`button[type="submit"]`).Length() != 1 || f.Find(`input[name="request_id"]`).Length() != 1 {
				t.Error("picker form lacks a submit button or request_id")
			}
		})
		if href, _ := doc.Find(`link[rel="stylesheet"]`).Attr("href"); href != "/static/app.css" {
			t.Errorf("stylesheet href = %q", href)
		}
	})

	t.Run("strict_csp_compatible", func(t *testing.T) {
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "unsafe-inline") {
			t.Fatalf("CSP = %q", csp)
		}
		if doc.Find("script, style, [style]").Length() != 0 {
			t.Fatal("page uses inline script or style")
		}
		doc.Find("*").Each(func(_ int, s *goquery.Selection) {
			for _, a := range s.Nodes[0].Attr {
				if strings.HasPrefix(a.Key, "on") {
					t.Errorf("inline event handler %s", a.Key)
				}
			}
		})
		if resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Fatal("missing no-store / frame protection headers")
		}
	})
}

func TestScopeLimitsClaims(t *testing.T) {
	env := newEnv(t, nil)
	env.oauth.Scopes = []string{oidc.ScopeOpenID, "offline_access"}
	ctx := context.Background()
	loc := env.signIn(t, env.oauth.AuthCodeURL("st", oauth2.S256ChallengeOption(verifierA)), "dev-support")
	tok, err := env.oauth.Exchange(ctx, loc.Query().Get("code"), oauth2.VerifierOption(verifierA))
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Extra("scope"); got != "openid" {
		t.Fatalf("scope = %v", got)
	}
	idt, err := env.provider.Verifier(&oidc.Config{ClientID: testClientID}).Verify(ctx, tok.Extra("id_token").(string))
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		t.Fatal(err)
	}
	if idt.Subject != "dev-support" || claims["email"] != nil || claims["name"] != nil {
		t.Fatalf("claims = %v", claims)
	}
}

func TestBoundedMemory(t *testing.T) {
	env := newEnv(t, nil)
	authURL := env.oauth.AuthCodeURL("st", oauth2.S256ChallengeOption(verifierA))
	u, _ := url.Parse(authURL)
	for range maxPending + 50 {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/authorize?"+u.RawQuery, nil)
		env.idp.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("status = %d", rec.Code)
		}
	}
	env.idp.mu.Lock()
	n := env.idp.pending.len()
	env.idp.mu.Unlock()
	if n > maxPending {
		t.Fatalf("pending = %d, cap %d", n, maxPending)
	}

	// Expired entries are swept.
	s := newTTLStore[int](10)
	now := time.Now()
	for i := range 5 {
		s.put(now, string(rune('a'+i)), i, now.Add(time.Minute))
	}
	s.put(now.Add(2*time.Minute), "z", 0, now.Add(3*time.Minute))
	if s.len() != 1 {
		t.Fatalf("after sweep len = %d, want 1", s.len())
	}
}

func TestNewValidatesConfig(t *testing.T) {
	good := Config{
		Issuer:       "http://127.0.0.1:8080/dev-idp",
		ClientID:     "c",
		ClientSecret: "s",
		RedirectURIs: []string{"http://127.0.0.1:8080/auth/callback"},
	}
	p, err := New(good)
	if err != nil {
		t.Fatalf("good config: %v", err)
	}
	if len(p.people) != 3 {
		t.Fatalf("empty People should default to DefaultPeople, got %d", len(p.people))
	}
	for name, mutate := range map[string]func(*Config){
		"no_issuer":         func(c *Config) { c.Issuer = "" },
		"relative_issuer":   func(c *Config) { c.Issuer = "/dev-idp" },
		"trailing_slash":    func(c *Config) { c.Issuer += "/" },
		"issuer_query":      func(c *Config) { c.Issuer += "?x=1" },
		"no_client_id":      func(c *Config) { c.ClientID = "" },
		"no_secret":         func(c *Config) { c.ClientSecret = "" },
		"no_redirects":      func(c *Config) { c.RedirectURIs = nil },
		"relative_redirect": func(c *Config) { c.RedirectURIs = []string{"/auth/callback"} },
		"fragment_redirect": func(c *Config) { c.RedirectURIs = []string{"http://x/cb#f"} },
		"empty_subject":     func(c *Config) { c.People = []Person{{Name: "x"}} },
		"duplicate_subject": func(c *Config) { c.People = []Person{{Subject: "a"}, {Subject: "a"}} },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := good
			mutate(&cfg)
			if _, err := New(cfg); err == nil {
				t.Fatal("New accepted an invalid config")
			}
		})
	}
}

func TestDefaultPeople(t *testing.T) {
	want := []Person{
		{"dev-admin", "ada@example.test", "Ada Admin", "admin"},
		{"dev-user", "uma@example.test", "Uma User", "user"},
		{"dev-support", "sam@example.test", "Sam Support", "support"},
	}
	got := DefaultPeople()
	if len(got) != len(want) {
		t.Fatalf("got %d people", len(got))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("person %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
