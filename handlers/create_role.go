package handlers

import (
	"github.com/labstack/echo/v4"

	"patchbay"
	"patchbay/views"
)

func (s *Server) createRole(c echo.Context) error {
	form, err := c.FormParams()
	if err != nil {
		return patchbay.Errorf(patchbay.EINVALID, "Could not read the form.")
	}
	var caps []patchbay.Capability
	for _, v := range form["capability"] {
		caps = append(caps, patchbay.Capability(v))
	}
	role, err := s.DB.CreateRole(c.Request().Context(), principalFrom(c).User.ID, form.Get("name"), caps)
	if err != nil {
		return err
	}
	return s.afterUsersAction(c, "Role "+role.Name+" created.", func(p views.UsersProps) templComponent {
		// The roles section shows its own flash, not the users table's.
		p.RolesFlash, p.Flash = p.Flash, ""
		return views.RolesSection(p)
	})
}
