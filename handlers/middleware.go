package handlers

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"patchbay"
)

func (s *Server) assignRequestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		id := hex.EncodeToString(b)
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		withValue(c, requestIDKey, id)
		return next(c)
	}
}

// logRequests writes one line per request. It logs the path without its
// query string, because queries carry OAuth codes and states.
func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			// Render now so the logged status is the one sent.
			c.Error(err)
		}
		attrs := []any{
			slog.String("method", c.Request().Method),
			slog.String("path", c.Request().URL.Path),
			slog.Int("status", c.Response().Status),
			slog.Duration("duration", time.Since(start)),
			slog.String("request_id", requestIDFrom(c)),
		}
		if p := principalFrom(c); p != nil {
			attrs = append(attrs, slog.Int64("user_id", p.User.ID))
		}
		s.Log.Info("request", attrs...)
		return nil
	}
}

// contentSecurityPolicy allows our own scripts and styles only.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

func (s *Server) securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		if !strings.HasPrefix(c.Request().URL.Path, "/static/") {
			h.Set("Cache-Control", "no-cache")
		}
		if s.secure() {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		return next(c)
	}
}

// noStore marks a response that holds a one-time secret: never cached,
// never sent as a referrer.
func noStore(c echo.Context) {
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
}

// loadPrincipal resolves the caller from a bearer token or the session
// cookie. A bad bearer token is an error; a stale cookie is dropped and the
// caller carries on signed out.
func (s *Server) loadPrincipal(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		if auth := c.Request().Header.Get(echo.HeaderAuthorization); auth != "" {
			scheme, token, _ := strings.Cut(auth, " ")
			if !strings.EqualFold(scheme, "Bearer") || token == "" {
				return patchbay.Errorf(patchbay.EUNAUTHORIZED, "Use Authorization: Bearer <token>.")
			}
			p, err := s.DB.APITokenPrincipal(ctx, strings.TrimSpace(token))
			if err != nil {
				return err
			}
			withValue(c, principalKey, p)
			return next(c)
		}
		if ck, err := c.Cookie(s.sessionCookieName()); err == nil && ck.Value != "" {
			p, err := s.DB.Session(ctx, ck.Value, s.Sessions)
			switch patchbay.ErrorCode(err) {
			case "":
				withValue(c, principalKey, p)
				withValue(c, sessionTokenKey, ck.Value)
			case patchbay.EUNAUTHORIZED:
				s.clearSessionCookie(c)
			default:
				return err
			}
		}
		return next(c)
	}
}
