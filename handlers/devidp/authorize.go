package devidp

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/a-h/templ"
)

// serveAuthorize handles the authorization endpoint.
//
//   - GET (or a form POST without request_id, as OpenID Connect Core §3.1.2.1
//     allows) is an authorization request: it is validated and, if valid,
//     answered with the picker page.
//   - A form POST carrying request_id is the picker's decision: it issues an
//     authorization code and redirects back to the client.
func (p *Provider) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	var params url.Values
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormSize)
		if err := r.ParseForm(); err != nil {
			p.renderError(w, http.StatusBadRequest, "The request could not be read.")
			return
		}
		params = r.PostForm
		if _, ok := params["request_id"]; ok {
			p.serveDecision(w, params)
			return
		}
	} else {
		var err error
		params, err = url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			p.renderError(w, http.StatusBadRequest, "The authorization request's query string is malformed.")
			return
		}
	}
	p.serveAuthorizationRequest(w, params)
}

// authError is an error returned to the client by redirect (RFC 6749
// §4.1.2.1).
type authError struct{ code, description string }

func (p *Provider) serveAuthorizationRequest(w http.ResponseWriter, params url.Values) {
	// client_id and redirect_uri are checked first: until both are known to
	// be valid, errors are shown to the user and never redirected.
	for _, k := range []string{"client_id", "redirect_uri"} {
		if len(params[k]) > 1 {
			p.renderError(w, http.StatusBadRequest, "The application sent the "+k+" parameter more than once.")
			return
		}
	}
	clientID, redirectURI := params.Get("client_id"), params.Get("redirect_uri")
	switch {
	case clientID == "":
		p.renderError(w, http.StatusBadRequest, "The application did not identify itself (missing client_id).")
		return
	case clientID != p.clientID:
		p.renderError(w, http.StatusBadRequest, "The application is not registered with this development identity provider (unknown client_id).")
		return
	case redirectURI == "":
		p.renderError(w, http.StatusBadRequest, "The application did not say where to return to (missing redirect_uri).")
		return
	case !p.redirectURIs[redirectURI]:
		p.renderError(w, http.StatusBadRequest, "The redirect_uri is not registered for this application, so sign-in cannot continue.")
		return
	}

	state := params.Get("state")
	if len(params["state"]) > 1 || len(state) > maxParamLen {
		// state cannot be trusted, so it is not echoed back.
		state = ""
	}
	if aerr := validateAuthParams(params); aerr != nil {
		p.redirectToClient(w, redirectURI, url.Values{
			"error":             {aerr.code},
			"error_description": {aerr.description},
			"state":             {state},
		})
		return
	}

	req := &authRequest{
		clientID:      clientID,
		redirectURI:   redirectURI,
		scopes:        grantedScopes(params.Get("scope")),
		state:         state,
		nonce:         params.Get("nonce"),
		codeChallenge: params.Get("code_challenge"),
	}
	id, err := p.randomToken(32)
	if err != nil {
		p.renderError(w, http.StatusInternalServerError, "Internal error.")
		return
	}
	now := p.now()
	p.mu.Lock()
	p.pending.put(now, id, req, now.Add(pendingTTL))
	p.mu.Unlock()

	returnTo := redirectURI
	if u, err := url.Parse(redirectURI); err == nil && u.Host != "" {
		returnTo = u.Scheme + "://" + u.Host
	}
	p.render(w, http.StatusOK, picker(pickerData{
		RequestID:  id,
		ClientID:   clientID,
		ReturnTo:   returnTo,
		Scopes:     req.scopes,
		People:     p.people,
		Stylesheet: p.stylesheet,
	}))
}

// validateAuthParams checks everything except client_id and redirect_uri.
func validateAuthParams(params url.Values) *authError {
	if _, ok := params["request"]; ok {
		return &authError{"request_not_supported", "the request parameter is not supported"}
	}
	if _, ok := params["request_uri"]; ok {
		return &authError{"request_uri_not_supported", "the request_uri parameter is not supported"}
	}
	for k, v := range params {
		if len(v) > 1 {
			return &authError{"invalid_request", "parameter " + k + " is repeated"}
		}
	}
	if len(params.Get("nonce")) > maxParamLen {
		return &authError{"invalid_request", "nonce is too long"}
	}
	if len(params.Get("state")) > maxParamLen {
		return &authError{"invalid_request", "state is too long"}
	}
	switch rt := params.Get("response_type"); rt {
	case "":
		return &authError{"invalid_request", "response_type is required"}
	case "code":
	default:
		return &authError{"unsupported_response_type", "only response_type=code is supported"}
	}
	if rm := params.Get("response_mode"); rm != "" && rm != "query" {
		return &authError{"invalid_request", "only response_mode=query is supported"}
	}
	if !slices.Contains(strings.Fields(params.Get("scope")), "openid") {
		return &authError{"invalid_scope", "scope must include openid"}
	}
	challenge := params.Get("code_challenge")
	if challenge == "" {
		return &authError{"invalid_request", "code_challenge is required (PKCE with S256)"}
	}
	if m := params.Get("code_challenge_method"); m != "S256" {
		return &authError{"invalid_request", "code_challenge_method must be S256"}
	}
	if !validS256Challenge(challenge) {
		return &authError{"invalid_request", "code_challenge is not a base64url-encoded SHA-256 digest"}
	}
	if prompt := strings.Fields(params.Get("prompt")); slices.Contains(prompt, "none") {
		if len(prompt) > 1 {
			return &authError{"invalid_request", "prompt=none cannot be combined with other values"}
		}
		return &authError{"login_required", "this development provider always requires picking a person"}
	}
	return nil
}

// validS256Challenge reports whether s looks like BASE64URL(SHA256(x)):
// 43 characters from the base64url alphabet (RFC 7636 §4.2).
func validS256Challenge(s string) bool {
	if len(s) != 43 {
		return false
	}
	for _, c := range []byte(s) {
		if !isBase64URLChar(c) {
			return false
		}
	}
	return true
}

func isBase64URLChar(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// grantedScopes returns the supported scopes requested, deduplicated, in
// request order.
func grantedScopes(scope string) []string {
	var out []string
	for _, s := range strings.Fields(scope) {
		if slices.Contains(supportedScopes, s) && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// serveDecision handles the picker form: request_id identifies (and
// authenticates) the pending authorization request; subject picks the person.
func (p *Provider) serveDecision(w http.ResponseWriter, form url.Values) {
	if len(form["request_id"]) != 1 || len(form["subject"]) > 1 {
		p.renderError(w, http.StatusBadRequest, "The sign-in form was malformed.")
		return
	}
	id := form.Get("request_id")
	_, deny := form["deny"]
	code, err := p.randomToken(32)
	if err != nil {
		p.renderError(w, http.StatusInternalServerError, "Internal error.")
		return
	}

	now := p.now()
	p.mu.Lock()
	req, ok := p.pending.get(now, id)
	if !ok {
		p.mu.Unlock()
		p.renderError(w, http.StatusBadRequest, "This sign-in request is unknown, was already used, or has expired. Start signing in again from the application.")
		return
	}
	if deny {
		p.pending.remove(id)
		p.mu.Unlock()
		p.redirectToClient(w, req.redirectURI, url.Values{
			"error":             {"access_denied"},
			"error_description": {"the user cancelled the sign-in"},
			"state":             {req.state},
		})
		return
	}
	person, ok := p.bySubject[form.Get("subject")]
	if !ok {
		p.mu.Unlock()
		p.renderError(w, http.StatusBadRequest, "The chosen person is not known to this development identity provider.")
		return
	}
	p.pending.remove(id)
	p.codes.put(now, code, &authCode{req: *req, subject: person.Subject, authTime: now}, now.Add(codeTTL))
	p.mu.Unlock()

	p.redirectToClient(w, req.redirectURI, url.Values{"code": {code}, "state": {req.state}})
}

// redirectToClient 302s to the (already validated) redirect URI with params
// added to its query, plus iss (RFC 9207). Empty values are omitted.
func (p *Provider) redirectToClient(w http.ResponseWriter, redirectURI string, params url.Values) {
	u, err := url.Parse(redirectURI)
	if err != nil { // cannot happen: validated in New
		p.renderError(w, http.StatusInternalServerError, "Internal error.")
		return
	}
	q := u.Query()
	for k, vs := range params {
		if len(vs) == 1 && vs[0] != "" {
			q.Set(k, vs[0])
		}
	}
	q.Set("iss", p.issuer)
	u.RawQuery = q.Encode()
	w.Header().Set("Location", u.String())
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(http.StatusFound)
}

func (p *Provider) renderError(w http.ResponseWriter, status int, message string) {
	p.render(w, status, errorPage(errorData{Message: message, Stylesheet: p.stylesheet}))
}

func (p *Provider) render(w http.ResponseWriter, status int, c templ.Component) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	if h.Get("Content-Security-Policy") == "" {
		h.Set("Content-Security-Policy", p.csp)
	}
	var buf strings.Builder
	if err := c.Render(context.Background(), &buf); err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(buf.String()))
}
