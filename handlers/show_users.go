package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"patchbay"
	"patchbay/views"
)

// usersProps builds the Users page model; flash and errMsg are shown above
// the table after an action.
func (s *Server) usersProps(c echo.Context, flash, errMsg string) (views.UsersProps, error) {
	ctx := c.Request().Context()
	me := principalFrom(c)
	users, err := s.DB.ListUsers(ctx)
	if err != nil {
		return views.UsersProps{}, err
	}
	roles, err := s.DB.ListRoles(ctx)
	if err != nil {
		return views.UsersProps{}, err
	}
	props := views.UsersProps{Shell: s.shell(c, "Users", "users"), Flash: flash, Error: errMsg}
	for _, u := range users {
		props.Users = append(props.Users, views.UserRow{
			ID: u.ID, Name: displayName(u.User), Email: u.Email, Role: u.Role, Disabled: u.Disabled,
			IsSelf: u.ID == me.User.ID, LastSeen: formatTime(u.LastSeen), Sessions: u.Sessions,
		})
	}
	for _, r := range roles {
		row := views.RoleRow{Name: r.Name, BuiltIn: r.BuiltIn, Members: r.Members}
		for _, c := range patchbay.AllCapabilities {
			row.Capabilities = append(row.Capabilities, views.CapabilityRow{Name: string(c), Description: c.Describe(), Held: r.Has(c)})
		}
		props.Roles = append(props.Roles, row)
		props.RoleNames = append(props.RoleNames, r.Name)
	}
	for _, c := range patchbay.AllCapabilities {
		props.AllCapabilities = append(props.AllCapabilities, views.CapabilityRow{
			Name: string(c), Description: c.Describe(), Held: isSelfService(c),
		})
	}
	return props, nil
}

func isSelfService(c patchbay.Capability) bool {
	for _, s := range patchbay.SelfServiceCapabilities {
		if s == c {
			return true
		}
	}
	return false
}

func (s *Server) showUsers(c echo.Context) error {
	props, err := s.usersProps(c, "", "")
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.UsersPage(props))
}

// afterUsersAction answers a Users page action: the swapped partial for
// htmx, a redirect back to the page for a plain form post.
func (s *Server) afterUsersAction(c echo.Context, flash string, partial func(views.UsersProps) templComponent) error {
	if !isHTMX(c) {
		return c.Redirect(http.StatusSeeOther, "/users")
	}
	props, err := s.usersProps(c, flash, "")
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, partial(props))
}
