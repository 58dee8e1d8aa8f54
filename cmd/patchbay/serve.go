package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"patchbay"
	"patchbay/db"
	"patchbay/handlers"
	"patchbay/handlers/devidp"
	"patchbay/mcp"
	"patchbay/mcp/connectors"
)

func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var cfg Config
	fs := newFlagSet("serve", &cfg)
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	dev := cfg.OIDCIssuer == ""
	if dev && !cfg.DevIDP && !loopbackAddr(cfg.Addr) {
		return usageError{fmt.Errorf("no --oidc-issuer is set, so the development sign-in would run, and it lets anyone sign in as anyone: refusing to listen on %s; use a loopback --addr, configure OIDC, or pass --dev-idp to insist", cfg.Addr)}
	}
	log := newLogger(cfg, stderr)

	d, err := openStore(ctx, &cfg, getenv)
	if err != nil {
		return err
	}
	defer d.Close()

	// Global connectors connect in the background, so a slow one never
	// delays the web server; Close stops every connector at shutdown.
	ccfg := connectors.Config{DB: d, DataDir: cfg.DataDir, IdleTimeout: cfg.ConnectorIdle, Log: log}
	if cfg.Sandbox == "bwrap" {
		if !mcp.BwrapAvailable() {
			return errors.New("--sandbox bwrap: bubblewrap (bwrap) is missing or cannot create a sandbox here; install Debian's bubblewrap package or use --sandbox none")
		}
		ccfg.Manager.Runner = mcp.BwrapRunner{Logger: log}
	}
	rt := connectors.New(ccfg)
	if err := rt.Start(ctx); err != nil {
		return fmt.Errorf("connectors: %w", err)
	}
	defer rt.Close()

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	base, err := baseURL(cfg, ln.Addr())
	if err != nil {
		return err
	}

	deps := handlers.Deps{
		DB:          d,
		Log:         log,
		BaseURL:     base,
		AdminEmails: splitList(cfg.AdminEmails),
		Sessions:    db.SessionPolicy{Idle: cfg.SessionIdle, MaxAge: cfg.SessionMaxAge},
		Version:     version,
		Connectors:  rt,
	}
	deps.TrustedProxies, _ = cfg.trustedProxies()
	oidcCfg := handlers.OIDCConfig{
		Issuer: cfg.OIDCIssuer, ClientID: cfg.OIDCClientID, ClientSecret: cfg.OIDCClientSecret,
		RedirectURL: base.JoinPath("/auth/callback").String(),
	}
	if dev {
		idp, admins, err := handlers.DevSignIn(ctx, d, base, &oidcCfg, devidp.DefaultPeople())
		if err != nil {
			return err
		}
		deps.DevIDP = idp
		deps.AdminEmails = append(deps.AdminEmails, admins...)
		log.Warn("development sign-in is on: anyone who can reach this address can sign in as anyone; set --oidc-issuer for real use")
	}
	deps.Auth = handlers.NewAuthenticator(oidcCfg)
	srv := &http.Server{
		Handler:           handlers.New(deps),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "Patchbay %s listening on %s\n", version, base)
	log.Info("listening", "url", base.String(), "data_dir", cfg.DataDir, "dev_sign_in", dev)

	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down", "deadline", cfg.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	rt.Close()
	log.Info("stopped")
	return nil
}

func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// baseURL is --base-url, or the address actually listened on (which
// matters for --addr with port 0).
func baseURL(cfg Config, addr net.Addr) (*url.URL, error) {
	s := cfg.BaseURL
	if s == "" {
		s = "http://" + addr.String()
	}
	u, err := url.Parse(strings.TrimSuffix(s, "/"))
	if err != nil {
		return nil, fmt.Errorf("base url: %w", err)
	}
	return u, nil
}

func newLogger(cfg Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(patchbay.NewRedactingHandler(h))
}
