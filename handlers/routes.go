package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"patchbay"
	"patchbay/static"
)

// Route is one registered route and the access it declares.
type Route struct {
	Method, Path string
	Access       Access
	// OwnCSRF marks a state-changing route that carries its own
	// anti-forgery token (the development identity provider's forms),
	// so only the same-origin check applies to it.
	OwnCSRF bool
}

// handle registers one route behind requireCap.
func (s *Server) handle(method, path string, a Access, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) {
	s.routes = append(s.routes, Route{Method: method, Path: path, Access: a})
	s.echo.Add(method, path, h, append([]echo.MiddlewareFunc{requireCap(a)}, mw...)...)
}

// registerRoutes lists every route in one place, by area.
func (s *Server) registerRoutes() {
	limited := s.rateLimitSignIn
	// The marketplace serves local and remote connectors; Runtimes checks
	// the capability of each entry's kind.
	activators := AnyCap(patchbay.CapRegisterLocalFromCatalog, patchbay.CapRegisterRemote)

	// Health and static files.
	s.handle(http.MethodGet, "/healthz", Public, s.showHealth)
	s.handle(http.MethodGet, "/readyz", Public, s.showReady)
	s.handle(http.MethodGet, "/static/*", Public, echo.WrapHandler(static.Handler()))

	// Sign-in.
	s.handle(http.MethodGet, "/signin", Public, s.showSignIn)
	s.handle(http.MethodGet, "/auth/login", Public, s.startSignIn, limited)
	s.handle(http.MethodGet, "/auth/callback", Public, s.finishSignIn, limited)
	s.handle(http.MethodPost, "/auth/logout", Public, s.signOut)
	if s.DevIDP != nil {
		dev := echo.WrapHandler(http.StripPrefix(devIDPMount, s.DevIDP))
		s.handle(http.MethodGet, devIDPMount+"/*", Public, dev)
		s.handle(http.MethodPost, devIDPMount+"/authorize", Public, dev, limited)
		s.handle(http.MethodPost, devIDPMount+"/token", Public, dev)
		s.markOwnCSRF(devIDPMount + "/authorize")
		s.markOwnCSRF(devIDPMount + "/token")
	}

	// The portal.
	s.handle(http.MethodGet, "/", SignedIn, s.showHome)
	s.handle(http.MethodGet, "/support", Cap(patchbay.CapInspectLogins), s.showSupport)

	// A person's own connectors. Activating and testing check the
	// capability the entry's kind needs (Runtimes.Activate,
	// Runtimes.TestConnection); deactivating looks the name up among the
	// caller's own connectors only.
	s.handle(http.MethodGet, "/connectors", SignedIn, s.showConnectors)
	s.handle(http.MethodGet, "/connectors/list", SignedIn, s.listConnectors)
	s.handle(http.MethodGet, "/marketplace", activators, s.showMarketplace)
	s.handle(http.MethodPost, "/connectors", activators, s.activateConnector)
	s.handle(http.MethodPost, "/connectors/test", activators, s.testConnector)
	s.handle(http.MethodPost, "/connectors/:name/deactivate", SignedIn, s.deactivateConnector)
	s.handle(http.MethodGet, "/connectors/:name/output", SignedIn, s.showOwnConnectorOutput)

	// Install runs: Runtimes.InstallRun decides who may read one, and
	// answers not found to anyone else.
	s.handle(http.MethodGet, "/installs/:id", SignedIn, s.showInstall)

	// Shared connectors, for catalog administrators.
	manage := Cap(patchbay.CapManageCatalog)
	s.handle(http.MethodGet, "/admin/connectors", manage, s.showSharedConnectors)
	s.handle(http.MethodGet, "/admin/connectors/list", manage, s.listSharedConnectors)
	s.handle(http.MethodGet, "/admin/connectors/new", manage, s.newSharedConnector)
	s.handle(http.MethodPost, "/admin/connectors", manage, s.createSharedConnector)
	s.handle(http.MethodPost, "/admin/connectors/test", manage, s.testSharedConnector)
	s.handle(http.MethodGet, "/admin/connectors/:id/settings", manage, s.sharedConnectorSettings)
	s.handle(http.MethodPost, "/admin/connectors/:id/settings", manage, s.saveSharedConnectorSettings)
	s.handle(http.MethodPost, "/admin/connectors/:id/enable", manage, s.enableSharedConnector)
	s.handle(http.MethodPost, "/admin/connectors/:id/disable", manage, s.disableSharedConnector)
	s.handle(http.MethodPost, "/admin/connectors/:id/refresh", manage, s.refreshSharedConnector)
	s.handle(http.MethodPost, "/admin/connectors/:id/delete", manage, s.deleteSharedConnector)
	s.handle(http.MethodGet, "/admin/connectors/:id/output", manage, s.sharedConnectorOutput)
	s.handle(http.MethodPost, "/admin/connectors/:id/grants", manage, s.grantSharedConnector)
	s.handle(http.MethodPost, "/admin/connectors/:id/grants/:grant/revoke", manage, s.revokeSharedConnectorGrant)

	// People and roles.
	s.handle(http.MethodGet, "/users", Cap(patchbay.CapUsersManage), s.showUsers)
	s.handle(http.MethodPost, "/users/:id/role", Cap(patchbay.CapUsersManage), s.setUserRole)
	s.handle(http.MethodPost, "/users/:id/disable", Cap(patchbay.CapUsersManage), s.disableUser)
	s.handle(http.MethodPost, "/users/:id/enable", Cap(patchbay.CapUsersManage), s.enableUser)
	s.handle(http.MethodPost, "/roles", Cap(patchbay.CapUsersManage), s.createRole)

	// Personal access tokens.
	s.handle(http.MethodGet, "/tokens", Cap(patchbay.CapAPITokens), s.showTokens)
	s.handle(http.MethodPost, "/tokens", Cap(patchbay.CapAPITokens), s.createToken)
	s.handle(http.MethodPost, "/tokens/:id/revoke", Cap(patchbay.CapAPITokens), s.revokeToken)

	// JSON API: session cookie or bearer token.
	s.handle(http.MethodGet, "/api/me", SignedIn, s.apiShowMe)
	s.handle(http.MethodGet, "/api/users", Cap(patchbay.CapUsersManage), s.apiListUsers)
}

func (s *Server) markOwnCSRF(path string) {
	for i := range s.routes {
		if s.routes[i].Path == path && s.routes[i].Method == http.MethodPost {
			s.routes[i].OwnCSRF = true
		}
	}
}

// ownCSRF reports whether the request's route carries its own token.
func (s *Server) ownCSRF(method, path string) bool {
	for _, r := range s.routes {
		if r.OwnCSRF && r.Method == method && r.Path == path {
			return true
		}
	}
	return false
}
