// Package devidp is a small, real, in-process OpenID Provider for local
// development.
//
// Patchbay mounts it when no OIDC issuer is configured, so the ordinary
// relying-party code (go-oidc + golang.org/x/oauth2) runs unchanged in
// development: discovery, the authorization code flow with PKCE (S256 only),
// client authentication at the token endpoint, signed ID tokens verified
// against the published JWKS, and the userinfo endpoint.
//
// Instead of asking for a password, the authorization endpoint renders a
// picker page listing the configured people; choosing one signs in as that
// person. It is therefore NOT for production use.
//
// All state (signing key, pending authorization requests, codes, access
// tokens) lives in memory, is bounded in size and expires.
package devidp

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Person is someone who can be signed in as from the picker page.
type Person struct {
	Subject string // "sub" claim; must be unique and non-empty
	Email   string
	Name    string
	Role    string // only a label on the picker ("admin", "user", "support"); never a claim
}

// Config configures a Provider.
type Config struct {
	// Issuer is the absolute URL of the provider including its mount path,
	// e.g. http://127.0.0.1:8080/dev-idp (no trailing slash). Endpoint URLs
	// in the discovery document are derived from it.
	Issuer       string
	ClientID     string
	ClientSecret string
	// RedirectURIs are the registered redirect URIs; the authorization and
	// token requests must use one of them exactly (string comparison).
	RedirectURIs []string
	// People are offered on the picker page. Empty means DefaultPeople().
	People []Person
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Rand is the source of randomness for identifiers, codes and tokens;
	// nil means crypto/rand. (Key generation passes it to crypto/rsa, which
	// in current Go versions ignores it and always uses a secure source.)
	Rand io.Reader
	// StylesheetURL, if set, is linked from the picker and error pages.
	StylesheetURL string
}

const (
	pendingTTL     = 10 * time.Minute
	codeTTL        = 60 * time.Second
	idTokenTTL     = 5 * time.Minute
	accessTokenTTL = 5 * time.Minute

	maxPending      = 1000
	maxCodes        = 1000
	maxAccessTokens = 1000

	maxParamLen = 1024 // bound on state, nonce and similar pass-through values
	maxFormSize = 64 << 10

	signingAlg = jose.RS256
)

// supportedScopes are the scopes this provider understands; others are
// ignored (not granted).
var supportedScopes = []string{"openid", "email", "profile"}

// Provider is an in-process OpenID Provider. It is an http.Handler whose
// paths are relative to its mount point: the caller strips the mount prefix,
// e.g. mux.Handle("/dev-idp/", http.StripPrefix("/dev-idp", p)).
type Provider struct {
	issuer       string
	clientID     string
	clientSecret string
	redirectURIs map[string]bool
	people       []Person
	bySubject    map[string]Person
	stylesheet   string
	csp          string
	now          func() time.Time

	randMu sync.Mutex
	rand   io.Reader

	signer jose.Signer
	jwks   jose.JSONWebKeySet
	kid    string

	mu      sync.Mutex
	pending *ttlStore[*authRequest]
	codes   *ttlStore[*authCode]
	tokens  *ttlStore[*accessToken]
}

// authRequest is a validated authorization request waiting for the person
// to be picked. Its random id doubles as the picker form's anti-forgery token.
type authRequest struct {
	clientID      string
	redirectURI   string
	scopes        []string
	state         string
	nonce         string
	codeChallenge string
}

// authCode is an issued authorization code.
type authCode struct {
	req      authRequest
	subject  string
	authTime time.Time
	// used is set on the first redemption attempt; a second attempt fails
	// and revokes the access token issued by the first (RFC 6749 §4.1.2).
	used        bool
	accessToken string
}

type accessToken struct {
	clientID string
	subject  string
	scopes   []string
}

// DefaultPeople returns the three seeded development people.
func DefaultPeople() []Person {
	return []Person{
		{Subject: "dev-admin", Email: "ada@example.test", Name: "Ada Admin", Role: "admin"},
		{Subject: "dev-user", Email: "uma@example.test", Name: "Uma User", Role: "user"},
		{Subject: "dev-support", Email: "sam@example.test", Name: "Sam Support", Role: "support"},
	}
}

// New validates cfg and returns a Provider with a freshly generated
// in-memory RSA-2048 signing key (RS256).
func New(cfg Config) (*Provider, error) {
	iss, err := url.Parse(cfg.Issuer)
	switch {
	case cfg.Issuer == "":
		return nil, errors.New("devidp: Issuer is required")
	case err != nil:
		return nil, fmt.Errorf("devidp: invalid Issuer: %w", err)
	case iss.Scheme != "http" && iss.Scheme != "https", iss.Host == "":
		return nil, fmt.Errorf("devidp: Issuer %q must be an absolute http(s) URL", cfg.Issuer)
	case iss.RawQuery != "" || iss.Fragment != "" || iss.User != nil || iss.ForceQuery || strings.Contains(cfg.Issuer, "#"):
		return nil, fmt.Errorf("devidp: Issuer %q must not contain user info, a query or a fragment", cfg.Issuer)
	case strings.HasSuffix(cfg.Issuer, "/"):
		return nil, fmt.Errorf("devidp: Issuer %q must not end with a slash", cfg.Issuer)
	}
	if cfg.ClientID == "" {
		return nil, errors.New("devidp: ClientID is required")
	}
	if cfg.ClientSecret == "" {
		return nil, errors.New("devidp: ClientSecret is required")
	}
	if len(cfg.RedirectURIs) == 0 {
		return nil, errors.New("devidp: at least one RedirectURI is required")
	}
	p := &Provider{
		issuer:       cfg.Issuer,
		clientID:     cfg.ClientID,
		clientSecret: cfg.ClientSecret,
		redirectURIs: make(map[string]bool, len(cfg.RedirectURIs)),
		bySubject:    make(map[string]Person),
		stylesheet:   cfg.StylesheetURL,
		now:          cfg.Now,
		rand:         cfg.Rand,
		pending:      newTTLStore[*authRequest](maxPending),
		codes:        newTTLStore[*authCode](maxCodes),
		tokens:       newTTLStore[*accessToken](maxAccessTokens),
	}
	if p.now == nil {
		p.now = time.Now
	}
	if p.rand == nil {
		p.rand = rand.Reader
	}
	formAction := []string{"'self'"}
	for _, ru := range cfg.RedirectURIs {
		u, err := url.Parse(ru)
		if err != nil || !u.IsAbs() || u.Opaque != "" || u.Fragment != "" || strings.Contains(ru, "#") {
			return nil, fmt.Errorf("devidp: RedirectURI %q must be an absolute URL without a fragment", ru)
		}
		if (u.Scheme == "http" || u.Scheme == "https") && u.Host == "" {
			return nil, fmt.Errorf("devidp: RedirectURI %q has no host", ru)
		}
		p.redirectURIs[ru] = true
		if src := cspSource(u); !slices.Contains(formAction, src) {
			formAction = append(formAction, src)
		}
	}
	people := cfg.People
	if len(people) == 0 {
		people = DefaultPeople()
	}
	for _, person := range people {
		if person.Subject == "" {
			return nil, errors.New("devidp: every Person needs a Subject")
		}
		if _, dup := p.bySubject[person.Subject]; dup {
			return nil, fmt.Errorf("devidp: duplicate Person Subject %q", person.Subject)
		}
		p.bySubject[person.Subject] = person
		p.people = append(p.people, person)
	}
	styleSrc := "'self'"
	if cfg.StylesheetURL != "" {
		u, err := url.Parse(cfg.StylesheetURL)
		if err != nil {
			return nil, fmt.Errorf("devidp: invalid StylesheetURL: %w", err)
		}
		if u.IsAbs() && u.Host != "" {
			styleSrc += " " + cspSource(u)
		}
	}
	p.csp = "default-src 'none'; style-src " + styleSrc + "; form-action " +
		strings.Join(formAction, " ") + "; frame-ancestors 'none'; base-uri 'none'"

	key, err := rsa.GenerateKey(p.rand, 2048)
	if err != nil {
		return nil, fmt.Errorf("devidp: generating signing key: %w", err)
	}
	pub := jose.JSONWebKey{Key: &key.PublicKey, Algorithm: string(signingAlg), Use: "sig"}
	thumb, err := pub.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("devidp: key thumbprint: %w", err)
	}
	p.kid = base64.RawURLEncoding.EncodeToString(thumb)
	pub.KeyID = p.kid
	p.jwks = jose.JSONWebKeySet{Keys: []jose.JSONWebKey{pub}}
	p.signer, err = jose.NewSigner(
		jose.SigningKey{Algorithm: signingAlg, Key: jose.JSONWebKey{Key: key, KeyID: p.kid, Algorithm: string(signingAlg)}},
		(&jose.SignerOptions{}).WithType("JWT"),
	)
	if err != nil {
		return nil, fmt.Errorf("devidp: creating signer: %w", err)
	}
	return p, nil
}

// cspSource returns scheme://host for use in a CSP source list.
func cspSource(u *url.URL) string {
	if u.Host == "" {
		return u.Scheme + ":"
	}
	return u.Scheme + "://" + u.Host
}

// ServeHTTP serves the provider's endpoints. Paths are relative to the mount
// point (the caller strips the mount prefix).
func (p *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/.well-known/openid-configuration":
		if !allowMethods(w, r, http.MethodGet, http.MethodHead) {
			return
		}
		p.serveDiscovery(w)
	case "/jwks":
		if !allowMethods(w, r, http.MethodGet, http.MethodHead) {
			return
		}
		p.serveJWKS(w)
	case "/authorize":
		if !allowMethods(w, r, http.MethodGet, http.MethodPost) {
			return
		}
		p.serveAuthorize(w, r)
	case "/token":
		if !allowMethods(w, r, http.MethodPost) {
			return
		}
		p.serveToken(w, r)
	case "/userinfo":
		if !allowMethods(w, r, http.MethodGet, http.MethodHead, http.MethodPost) {
			return
		}
		p.serveUserinfo(w, r)
	default:
		http.NotFound(w, r)
	}
}

func allowMethods(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

func (p *Provider) endpoint(path string) string { return p.issuer + path }

func (p *Provider) serveDiscovery(w http.ResponseWriter) {
	doc := map[string]any{
		"issuer":                                p.issuer,
		"authorization_endpoint":                p.endpoint("/authorize"),
		"token_endpoint":                        p.endpoint("/token"),
		"jwks_uri":                              p.endpoint("/jwks"),
		"userinfo_endpoint":                     p.endpoint("/userinfo"),
		"response_types_supported":              []string{"code"},
		"response_modes_supported":              []string{"query"},
		"grant_types_supported":                 []string{"authorization_code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{string(signingAlg)},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
		"scopes_supported":                      supportedScopes,
		"claims_supported": []string{
			"iss", "sub", "aud", "exp", "iat", "auth_time", "nonce", "at_hash",
			"email", "email_verified", "name",
		},
		"authorization_response_iss_parameter_supported": true,
		"request_parameter_supported":                    false,
		"request_uri_parameter_supported":                false,
		"claims_parameter_supported":                     false,
	}
	w.Header().Set("Cache-Control", "no-cache")
	writeJSON(w, http.StatusOK, doc)
}

func (p *Provider) serveJWKS(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Content-Type", "application/jwk-set+json")
	body, err := json.Marshal(p.jwks)
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// randomToken returns n random bytes, base64url-encoded.
func (p *Provider) randomToken(n int) (string, error) {
	b := make([]byte, n)
	p.randMu.Lock()
	_, err := io.ReadFull(p.rand, b)
	p.randMu.Unlock()
	if err != nil {
		return "", fmt.Errorf("devidp: reading randomness: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
