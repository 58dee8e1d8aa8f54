package handlers

import "github.com/labstack/echo/v4"

// echoRoutes returns the routes echo itself has registered, so that a test
// can prove every one of them went through handle and declared its access.
func (s *Server) echoRoutes() []*echo.Route { return s.echo.Routes() }
