package handlers

import (
	"github.com/labstack/echo/v4"

	"patchbay"
	"patchbay/views"
)

// shell builds what every page needs from the caller's principal: the
// navigation a person sees follows their capabilities, nothing else.
func (s *Server) shell(c echo.Context, title, active string) views.Shell {
	sh := views.Shell{Title: title, Active: active, DevSignIn: s.DevIDP != nil}
	p := principalFrom(c)
	if p == nil || p.ViaToken {
		return sh
	}
	sh.Viewer = &views.Viewer{Name: displayName(p.User), Email: p.User.Email, Role: p.User.Role}
	sh.CSRFToken = p.CSRFToken
	sh.Nav = views.Nav{
		Connectors:       true,
		Marketplace:      p.Can(patchbay.CapRegisterLocalFromCatalog) || p.Can(patchbay.CapRegisterRemote),
		SharedConnectors: p.Can(patchbay.CapManageCatalog),
		Users:            p.Can(patchbay.CapUsersManage),
		Support:          p.Can(patchbay.CapInspectLogins),
		Tokens:           p.Can(patchbay.CapAPITokens),
	}
	return sh
}

func displayName(u patchbay.User) string {
	if u.Name != "" {
		return u.Name
	}
	return u.Email
}
