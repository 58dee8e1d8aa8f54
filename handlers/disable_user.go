package handlers

import (
	"github.com/labstack/echo/v4"

	"patchbay"
	"patchbay/views"
)

// disableUser disables a person and ends every one of their sessions.
func (s *Server) disableUser(c echo.Context) error {
	return s.setDisabled(c, true)
}

func (s *Server) enableUser(c echo.Context) error {
	return s.setDisabled(c, false)
}

func (s *Server) setDisabled(c echo.Context, disabled bool) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	me := principalFrom(c)
	if disabled && id == me.User.ID {
		return patchbay.Errorf(patchbay.EINVALID, "You cannot disable yourself.")
	}
	if err := s.DB.SetUserDisabled(c.Request().Context(), me.User.ID, id, disabled); err != nil {
		return err
	}
	flash := "User enabled."
	if disabled {
		flash = "User disabled; their sessions have ended."
	}
	return s.afterUsersAction(c, flash, func(p views.UsersProps) templComponent { return views.UsersTable(p) })
}
