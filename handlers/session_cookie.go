package handlers

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// sessionCookieName is __Host- prefixed on https, which pins the cookie to
// this host and path and requires Secure.
func (s *Server) sessionCookieName() string {
	if s.secure() {
		return "__Host-patchbay_session"
	}
	return "patchbay_session"
}

func (s *Server) flowCookieName() string {
	if s.secure() {
		return "__Host-patchbay_signin"
	}
	return "patchbay_signin"
}

func (s *Server) setCookie(c echo.Context, name, value string, maxAge time.Duration) {
	c.SetCookie(&http.Cookie{
		Name:     name,
		Value:    value,
		Path:     "/",
		MaxAge:   int(maxAge.Seconds()),
		HttpOnly: true,
		Secure:   s.secure(),
		SameSite: http.SameSiteLaxMode,
	})
}

func (s *Server) clearCookie(c echo.Context, name string) {
	c.SetCookie(&http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.secure(), SameSite: http.SameSiteLaxMode})
}

func (s *Server) clearSessionCookie(c echo.Context) { s.clearCookie(c, s.sessionCookieName()) }
