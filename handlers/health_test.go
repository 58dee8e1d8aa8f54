package handlers

import (
	"net/http"
	"strings"
	"testing"
)

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serverOpts{})
	c := ts.newClient(t)

	t.Run("healthz answers ok", func(t *testing.T) {
		r := c.get(t, "/healthz")
		wantStatus(t, r, http.StatusOK)
		if got := strings.TrimSpace(r.body); got != "ok" {
			t.Errorf("got body %q; want ok", got)
		}
	})

	t.Run("readyz answers ready while the database answers", func(t *testing.T) {
		r := c.get(t, "/readyz")
		wantStatus(t, r, http.StatusOK)
		if got := strings.TrimSpace(r.body); got != "ready" {
			t.Errorf("got body %q; want ready", got)
		}
	})

	t.Run("readyz answers 503 once the database is closed", func(t *testing.T) {
		// The pools are closed directly rather than with db.Close, which
		// sets them to nil so that Ping panics (recovered into a 500).
		for _, pool := range []interface{ Close() error }{ts.db.Readers(), ts.db.Writer()} {
			if err := pool.Close(); err != nil {
				t.Fatal(err)
			}
		}
		r := c.get(t, "/readyz")
		wantStatus(t, r, http.StatusServiceUnavailable)
		if got := strings.TrimSpace(r.body); got != "not ready" {
			t.Errorf("got body %q; want not ready", got)
		}
		if got := c.get(t, "/healthz"); got.status != http.StatusOK {
			t.Errorf("healthz after the database closed: got %d; want 200", got.status)
		}
	})
}
