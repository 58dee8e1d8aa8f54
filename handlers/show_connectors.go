package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"patchbay"
	"patchbay/views"
)

func (s *Server) showHome(c echo.Context) error {
	return c.Redirect(http.StatusSeeOther, "/connectors")
}

func (s *Server) showConnectors(c echo.Context) error {
	return render(c, http.StatusOK, views.ConnectorsPage(views.ConnectorsProps{
		Shell:                s.shell(c, "Connectors", "connectors"),
		CanBrowseMarketplace: principalFrom(c).Can(patchbay.CapRegisterLocalFromCatalog),
	}))
}

func (s *Server) showMarketplace(c echo.Context) error {
	return render(c, http.StatusOK, views.MarketplacePage(views.MarketplaceProps{
		Shell: s.shell(c, "Marketplace", "marketplace"),
	}))
}
