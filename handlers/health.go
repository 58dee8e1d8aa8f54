package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// showHealth answers while the process is up.
func (s *Server) showHealth(c echo.Context) error {
	return c.String(http.StatusOK, "ok\n")
}

// showReady answers 200 only when the database answers and every
// migration is applied.
func (s *Server) showReady(c echo.Context) error {
	if err := s.DB.Ping(c.Request().Context()); err != nil {
		s.Log.Warn("not ready", "err", err)
		return c.String(http.StatusServiceUnavailable, "not ready\n")
	}
	return c.String(http.StatusOK, "ready\n")
}
