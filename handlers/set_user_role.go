package handlers

import (
	"github.com/labstack/echo/v4"

	"patchbay"
	"patchbay/views"
)

func (s *Server) setUserRole(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	me := principalFrom(c)
	role := c.FormValue("role")
	if id == me.User.ID && role != me.User.Role {
		// Demoting yourself could leave nobody able to manage people.
		return patchbay.Errorf(patchbay.EINVALID, "You cannot change your own role. Ask another administrator.")
	}
	if err := s.DB.SetUserRole(c.Request().Context(), me.User.ID, id, role); err != nil {
		return err
	}
	return s.afterUsersAction(c, "Role changed to "+role+".", func(p views.UsersProps) templComponent { return views.UsersTable(p) })
}
