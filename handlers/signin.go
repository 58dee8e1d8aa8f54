package handlers

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"patchbay"
	"patchbay/views"
)

// devIDPMount is where the development identity provider is served.
const devIDPMount = "/dev-idp"

// safeNext keeps only same-site paths, so ?next= cannot redirect off-site.
// Control characters are refused outright: browsers drop tabs and newlines
// from URLs, so "/\t/evil.example" would become "//evil.example".
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") ||
		strings.ContainsFunc(next, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "/"
	}
	return next
}

func (s *Server) showSignIn(c echo.Context) error {
	if principalFrom(c) != nil {
		return c.Redirect(http.StatusSeeOther, "/")
	}
	next := c.QueryParam("next")
	if next != "" {
		next = safeNext(next)
	}
	return render(c, http.StatusOK, views.SignInPage(views.SignInProps{
		Shell: s.shell(c, "Sign in", ""), DevSignIn: s.DevIDP != nil, Next: next,
	}))
}

func (s *Server) startSignIn(c echo.Context) error {
	authURL, key, err := s.Auth.Begin(c.Request().Context(), safeNext(c.QueryParam("next")))
	if err != nil {
		return err
	}
	s.setCookie(c, s.flowCookieName(), key, flowTTL)
	return c.Redirect(http.StatusFound, authURL)
}

func (s *Server) finishSignIn(c echo.Context) error {
	// The callback URL carries the authorization code and state: neither
	// this answer nor the error page may be cached or leak it as a referrer.
	noStore(c)
	ctx := c.Request().Context()
	key := ""
	if ck, err := c.Cookie(s.flowCookieName()); err == nil {
		key = ck.Value
	}
	s.clearCookie(c, s.flowCookieName())
	in, next, err := s.Auth.Finish(ctx, key, c.QueryParam("state"), c.QueryParam("code"), c.QueryParam("error"))
	if err != nil {
		s.Log.Warn("sign-in failed", "err", err, "request_id", requestIDFrom(c))
		return err
	}
	u, err := s.DB.SignInUser(ctx, in, s.AdminEmails)
	if err != nil {
		return err
	}
	if u.Disabled {
		return errDisabled
	}
	// A fresh session id at every sign-in: an id planted before sign-in is
	// worthless after it. The old session, if any, ends here.
	if old := sessionTokenFrom(c); old != "" {
		if err := s.DB.DeleteSession(ctx, old); err != nil {
			return err
		}
	}
	token, err := s.DB.CreateSession(ctx, u.ID, s.Sessions)
	if err != nil {
		return err
	}
	s.setCookie(c, s.sessionCookieName(), token, s.Sessions.MaxAge)
	// The user's own connectors start now, in the background, so they are
	// up by the time a client asks for their tools.
	s.Connectors.WarmUser(u.ID)
	return c.Redirect(http.StatusSeeOther, safeNext(next))
}

func (s *Server) signOut(c echo.Context) error {
	if tok := sessionTokenFrom(c); tok != "" {
		if err := s.DB.DeleteSession(c.Request().Context(), tok); err != nil {
			return err
		}
	}
	s.clearSessionCookie(c)
	if isHTMX(c) {
		c.Response().Header().Set("HX-Redirect", "/signin")
		return c.NoContent(http.StatusOK)
	}
	return c.Redirect(http.StatusSeeOther, "/signin")
}

var errDisabled = patchbay.Errorf(patchbay.EFORBIDDEN, "This account is disabled. Ask an administrator.")
