package handlers

import (
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"patchbay"
)

// formatTime renders a stored time for people; nil reads "never".
func formatTime(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "never"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// idParam parses a numeric path parameter; anything else is not found,
// exactly like an id that does not exist.
func idParam(c echo.Context, name string) (int64, error) {
	id, err := strconv.ParseInt(c.Param(name), 10, 64)
	if err != nil || id <= 0 {
		return 0, patchbay.Errorf(patchbay.ENOTFOUND, "Not found.")
	}
	return id, nil
}
