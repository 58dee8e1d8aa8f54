package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"patchbay/views"
)

// showSupport lists everyone's sign-in status for support staff. It is
// read-only and built from counts and times, never from secrets.
func (s *Server) showSupport(c echo.Context) error {
	users, err := s.DB.ListUsers(c.Request().Context())
	if err != nil {
		return err
	}
	rows := make([]views.SupportRow, 0, len(users))
	for _, u := range users {
		rows = append(rows, views.SupportRow{
			Name: displayName(u.User), Email: u.Email, Role: u.Role, Disabled: u.Disabled,
			LastSeen: formatTime(u.LastSeen), Sessions: u.Sessions, Connectors: u.Connectors,
		})
	}
	return render(c, http.StatusOK, views.SupportPage(views.SupportProps{Shell: s.shell(c, "Support", "support"), People: rows}))
}
