package handlers

import (
	"context"

	"github.com/labstack/echo/v4"

	"patchbay"
)

// ctxKey is unexported so only this package can set request context values.
type ctxKey int

const (
	principalKey ctxKey = iota
	sessionTokenKey
	requestIDKey
)

func withValue(c echo.Context, k ctxKey, v any) {
	c.SetRequest(c.Request().WithContext(context.WithValue(c.Request().Context(), k, v)))
}

// principalFrom returns the signed-in caller, or nil.
func principalFrom(c echo.Context) *patchbay.Principal {
	p, _ := c.Request().Context().Value(principalKey).(*patchbay.Principal)
	return p
}

// sessionTokenFrom returns the caller's session cookie value, or "".
func sessionTokenFrom(c echo.Context) string {
	s, _ := c.Request().Context().Value(sessionTokenKey).(string)
	return s
}

// requestIDFrom returns the request's id for logs and error pages.
func requestIDFrom(c echo.Context) string {
	s, _ := c.Request().Context().Value(requestIDKey).(string)
	return s
}
