package devidp

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// writeOAuthError writes an RFC 6749 §5.2 error response.
func writeOAuthError(w http.ResponseWriter, status int, code, description string) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, status, map[string]string{"error": code, "error_description": description})
}

// secretsEqual compares in constant time, independent of where the inputs
// differ and of their lengths.
func secretsEqual(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

type tokenResponse struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int64  `json:"expires_in"`
	IDToken     string `json:"id_token"`
	Scope       string `json:"scope"`
}

type idTokenClaims struct {
	Issuer          string   `json:"iss"`
	Subject         string   `json:"sub"`
	Audience        []string `json:"aud"`
	Expiry          int64    `json:"exp"`
	IssuedAt        int64    `json:"iat"`
	AuthTime        int64    `json:"auth_time"`
	Nonce           string   `json:"nonce,omitempty"`
	AuthorizedParty string   `json:"azp"`
	AccessTokenHash string   `json:"at_hash"`
	userClaims
}

// userClaims are the person's claims, released according to the granted
// scopes (OpenID Connect Core §5.4).
type userClaims struct {
	Email         string `json:"email,omitempty"`
	EmailVerified *bool  `json:"email_verified,omitempty"`
	Name          string `json:"name,omitempty"`
}

func claimsFor(person Person, scopes []string) userClaims {
	var c userClaims
	if slices.Contains(scopes, "email") && person.Email != "" {
		verified := true
		c.Email, c.EmailVerified = person.Email, &verified
	}
	if slices.Contains(scopes, "profile") {
		c.Name = person.Name
	}
	return c
}

// serveToken is the token endpoint (authorization_code grant only).
func (p *Provider) serveToken(w http.ResponseWriter, r *http.Request) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/x-www-form-urlencoded" {
		writeOAuthError(w, http.StatusBadRequest, "invalid_request", "the request body must be application/x-www-form-urlencoded")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormSize)
	if err := r.ParseForm(); err != nil {
		writeOAuthError(w, http.StatusBadRequest, "invalid_request", "the request body could not be parsed")
		return
	}
	form := r.PostForm
	for k, v := range form {
		if len(v) > 1 {
			writeOAuthError(w, http.StatusBadRequest, "invalid_request", "parameter "+k+" is repeated")
			return
		}
	}

	// Client authentication: client_secret_basic or client_secret_post,
	// never both (RFC 6749 §2.3).
	basicID, basicSecret, hasBasic := r.BasicAuth()
	_, hasPostSecret := form["client_secret"]
	var clientID, secret string
	switch {
	case hasBasic && hasPostSecret:
		writeOAuthError(w, http.StatusBadRequest, "invalid_request", "use only one client authentication method")
		return
	case hasBasic:
		// RFC 6749 §2.3.1: credentials are form-encoded before base64.
		id, err1 := url.QueryUnescape(basicID)
		sec, err2 := url.QueryUnescape(basicSecret)
		if err1 != nil || err2 != nil {
			p.invalidClient(w, true)
			return
		}
		if formID := form.Get("client_id"); formID != "" && formID != id {
			writeOAuthError(w, http.StatusBadRequest, "invalid_request", "client_id does not match the authenticated client")
			return
		}
		clientID, secret = id, sec
	case hasPostSecret:
		clientID, secret = form.Get("client_id"), form.Get("client_secret")
	default:
		p.invalidClient(w, true)
		return
	}
	idOK := secretsEqual(clientID, p.clientID)
	secretOK := secretsEqual(secret, p.clientSecret)
	if !idOK || !secretOK {
		p.invalidClient(w, hasBasic)
		return
	}

	switch gt := form.Get("grant_type"); gt {
	case "":
		writeOAuthError(w, http.StatusBadRequest, "invalid_request", "grant_type is required")
		return
	case "authorization_code":
	default:
		writeOAuthError(w, http.StatusBadRequest, "unsupported_grant_type", "only authorization_code is supported")
		return
	}
	code := form.Get("code")
	if code == "" {
		writeOAuthError(w, http.StatusBadRequest, "invalid_request", "code is required")
		return
	}
	redirectURI := form.Get("redirect_uri")
	if redirectURI == "" {
		writeOAuthError(w, http.StatusBadRequest, "invalid_request", "redirect_uri is required")
		return
	}
	verifier := form.Get("code_verifier")

	at, err := p.randomToken(32)
	if err != nil {
		writeOAuthError(w, http.StatusInternalServerError, "server_error", "internal error")
		return
	}

	now := p.now()
	p.mu.Lock()
	c, ok := p.codes.get(now, code)
	if !ok {
		p.mu.Unlock()
		writeOAuthError(w, http.StatusBadRequest, "invalid_grant", "the authorization code is invalid or expired")
		return
	}
	if c.used {
		// Replay: invalidate the code and revoke what it was exchanged for.
		p.codes.remove(code)
		if c.accessToken != "" {
			p.tokens.remove(c.accessToken)
		}
		p.mu.Unlock()
		writeOAuthError(w, http.StatusBadRequest, "invalid_grant", "the authorization code was already used")
		return
	}
	// Any redemption attempt consumes the code.
	c.used = true
	var failure string
	switch {
	case c.req.clientID != clientID:
		failure = "the authorization code was issued to another client"
	case c.req.redirectURI != redirectURI:
		failure = "redirect_uri does not match the authorization request"
	case !pkceMatches(verifier, c.req.codeChallenge):
		failure = "code_verifier does not match the code_challenge"
	}
	if failure != "" {
		p.mu.Unlock()
		writeOAuthError(w, http.StatusBadRequest, "invalid_grant", failure)
		return
	}
	c.accessToken = at
	p.tokens.put(now, at, &accessToken{clientID: clientID, subject: c.subject, scopes: c.req.scopes}, now.Add(accessTokenTTL))
	p.mu.Unlock()

	person := p.bySubject[c.subject]
	idToken, err := p.signIDToken(idTokenClaims{
		Issuer:          p.issuer,
		Subject:         person.Subject,
		Audience:        []string{clientID},
		Expiry:          now.Add(idTokenTTL).Unix(),
		IssuedAt:        now.Unix(),
		AuthTime:        c.authTime.Unix(),
		Nonce:           c.req.nonce,
		AuthorizedParty: clientID,
		AccessTokenHash: halfHash(at),
		userClaims:      claimsFor(person, c.req.scopes),
	})
	if err != nil {
		p.mu.Lock()
		p.tokens.remove(at)
		p.mu.Unlock()
		writeOAuthError(w, http.StatusInternalServerError, "server_error", "could not sign the ID token")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, http.StatusOK, tokenResponse{
		AccessToken: at,
		TokenType:   "Bearer",
		ExpiresIn:   int64(accessTokenTTL / time.Second),
		IDToken:     idToken,
		Scope:       strings.Join(c.req.scopes, " "),
	})
}

func (p *Provider) invalidClient(w http.ResponseWriter, challenge bool) {
	if challenge {
		w.Header().Set("WWW-Authenticate", `Basic realm="devidp", charset="UTF-8"`)
	}
	writeOAuthError(w, http.StatusUnauthorized, "invalid_client", "client authentication failed")
}

// pkceMatches checks an RFC 7636 S256 code_verifier against the challenge.
func pkceMatches(verifier, challenge string) bool {
	if len(verifier) < 43 || len(verifier) > 128 {
		return false
	}
	for _, c := range []byte(verifier) {
		if !isBase64URLChar(c) && c != '.' && c != '~' {
			return false
		}
	}
	sum := sha256.Sum256([]byte(verifier))
	return subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(challenge)) == 1
}

// halfHash is the at_hash value for an RS256/ES256-signed ID token: the
// base64url encoding of the left half of SHA-256(token).
func halfHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(sum[:len(sum)/2])
}

func (p *Provider) signIDToken(claims idTokenClaims) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	jws, err := p.signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}

// serveUserinfo is the userinfo endpoint (RFC 6750 bearer token in the
// Authorization header).
func (p *Provider) serveUserinfo(w http.ResponseWriter, r *http.Request) {
	authz := r.Header.Get("Authorization")
	scheme, token, found := strings.Cut(authz, " ")
	if authz == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="devidp"`)
		writeOAuthError(w, http.StatusUnauthorized, "invalid_request", "a bearer access token is required")
		return
	}
	token = strings.TrimSpace(token)
	if !found || !strings.EqualFold(scheme, "Bearer") || token == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="devidp", error="invalid_request"`)
		writeOAuthError(w, http.StatusBadRequest, "invalid_request", "the Authorization header must use the Bearer scheme")
		return
	}
	p.mu.Lock()
	tok, ok := p.tokens.get(p.now(), token)
	p.mu.Unlock()
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="devidp", error="invalid_token", error_description="the access token is invalid or expired"`)
		writeOAuthError(w, http.StatusUnauthorized, "invalid_token", "the access token is invalid or expired")
		return
	}
	person := p.bySubject[tok.subject]
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, struct {
		Subject string `json:"sub"`
		userClaims
	}{person.Subject, claimsFor(person, tok.scopes)})
}
