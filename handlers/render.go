package handlers

import (
	"bytes"
	"strings"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
)

// render renders a component into a buffer first, so a failed render
// becomes an error response instead of a half-written 200.
func render(c echo.Context, status int, comp templ.Component) error {
	var buf bytes.Buffer
	if err := comp.Render(c.Request().Context(), &buf); err != nil {
		return err
	}
	return c.HTMLBlob(status, buf.Bytes())
}

// isHTMX reports whether the request came from an htmx swap.
func isHTMX(c echo.Context) bool {
	return c.Request().Header.Get("HX-Request") == "true" && c.Request().Header.Get("HX-History-Restore-Request") != "true"
}

// wantsJSON reports whether the caller is an API client.
func wantsJSON(c echo.Context) bool {
	return strings.HasPrefix(c.Request().URL.Path, "/api/") ||
		strings.Contains(c.Request().Header.Get(echo.HeaderAccept), echo.MIMEApplicationJSON)
}
