package handlers

import (
	"crypto/subtle"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"patchbay"
)

// csrfHeader carries the token on HTMX requests (set by hx-headers on
// <body>); forms carry it as the csrf_token field.
const (
	csrfHeader = "X-CSRF-Token"
	csrfField  = "csrf_token"
)

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// checkCSRF guards every state-changing request twice: the browser's own
// Sec-Fetch-Site/Origin must be same-origin, and a cookie-authenticated
// request must echo its session's token. Bearer-token calls carry no
// ambient credential, so they need only the first check.
func (s *Server) checkCSRF(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if safeMethod(r.Method) {
			return next(c)
		}
		if !s.sameOrigin(r) {
			return patchbay.Errorf(patchbay.EFORBIDDEN, "Cross-site request refused.")
		}
		p := principalFrom(c)
		if p == nil || p.ViaToken || s.ownCSRF(r.Method, c.Path()) {
			return next(c)
		}
		sent := r.Header.Get(csrfHeader)
		if sent == "" {
			sent = c.FormValue(csrfField)
		}
		if sent == "" || subtle.ConstantTimeCompare([]byte(sent), []byte(p.CSRFToken)) != 1 {
			return patchbay.Errorf(patchbay.EFORBIDDEN, "This form has expired. Reload the page and try again.")
		}
		return next(c)
	}
}

// sameOrigin trusts the browser's Fetch Metadata when it sends it and
// falls back to Origin; a request with neither is not from a modern
// browser form and is left to the token check.
func (s *Server) sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin", "none":
		return true
	case "cross-site", "same-site":
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	return u.Scheme == s.BaseURL.Scheme && u.Host == s.BaseURL.Host
}
