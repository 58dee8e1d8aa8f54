// Package handlers is Patchbay's HTTP layer: thin handlers that parse,
// authorize, call the store and render a templ view. Errors go back to one
// central error handler.
package handlers

import (
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"

	"patchbay/db"
	"patchbay/mcp/connectors"
)

// Deps is everything the HTTP layer needs, wired in cmd/patchbay.
type Deps struct {
	DB *db.DB
	// Connectors runs the shared and per-user connectors and their
	// install jobs.
	Connectors  *connectors.Runtimes
	Log         *slog.Logger
	BaseURL     *url.URL
	AdminEmails []string
	Sessions    db.SessionPolicy
	Auth        *Authenticator
	// DevIDP is the in-process development identity provider, mounted at
	// /dev-idp when no real issuer is configured; nil otherwise.
	DevIDP http.Handler
	// TrustedProxies are the networks whose X-Forwarded-For is believed.
	TrustedProxies []*net.IPNet
	// SignInRate and SignInBurst bound sign-in attempts per client IP.
	SignInRate  time.Duration
	SignInBurst int
	Version     string
	Now         func() time.Time
}

// Server is Patchbay's HTTP server.
type Server struct {
	Deps
	echo    *echo.Echo
	routes  []Route
	limiter *ipLimiter
}

// New builds the server and registers every route.
func New(d Deps) *Server {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.SignInRate == 0 {
		d.SignInRate = 6 * time.Second
	}
	if d.SignInBurst == 0 {
		// One sign-in takes up to three tokens (login, picker, callback).
		d.SignInBurst = 20
	}
	if d.Sessions.Idle == 0 {
		d.Sessions.Idle = 12 * time.Hour
	}
	if d.Sessions.MaxAge == 0 {
		d.Sessions.MaxAge = 7 * 24 * time.Hour
	}
	s := &Server{Deps: d}
	s.limiter = newIPLimiter(d.SignInRate, d.SignInBurst, d.Now)
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.handleError
	e.IPExtractor = ipExtractor(d.TrustedProxies)
	e.Pre(s.assignRequestID)
	e.Use(s.logRequests, s.recoverPanics, s.securityHeaders, s.loadPrincipal, s.checkCSRF)
	s.echo = e
	s.registerRoutes()
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.echo.ServeHTTP(w, r) }

// Routes lists every registered route with its declared access.
func (s *Server) Routes() []Route { return append([]Route(nil), s.routes...) }

// secure reports whether Patchbay is served over https, which decides the
// cookie prefix and Secure flag.
func (s *Server) secure() bool { return s.BaseURL.Scheme == "https" }

func ipExtractor(trusted []*net.IPNet) echo.IPExtractor {
	if len(trusted) == 0 {
		// Without a trusted proxy, X-Forwarded-For is whatever the client
		// says, so it must not decide rate limits.
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, n := range trusted {
		opts = append(opts, echo.TrustIPRange(n))
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}
