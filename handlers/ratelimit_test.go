package handlers

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"
)

func TestSignInRateLimit(t *testing.T) {
	t.Parallel()
	const burst = 3
	// The rate is slow enough that no token comes back during the test.
	limited := serverOpts{SignInBurst: burst, SignInRate: time.Hour}

	wantLimited := func(t *testing.T, r response) {
		t.Helper()
		wantStatus(t, r, http.StatusTooManyRequests)
		secs, err := strconv.Atoi(r.header.Get("Retry-After"))
		if err != nil || secs <= 0 {
			t.Errorf("got Retry-After %q; want a positive number of seconds", r.header.Get("Retry-After"))
		}
	}

	t.Run("the request after the burst gets 429 with Retry-After", func(t *testing.T) {
		t.Parallel()
		ts := newTestServer(t, limited)
		c := ts.newClient(t)
		for i := range burst {
			if r := c.get(t, "/auth/login"); r.status != http.StatusFound {
				t.Fatalf("attempt %d: got %d; want 302", i+1, r.status)
			}
		}
		wantLimited(t, c.get(t, "/auth/login"))
		// The callback and the provider's form share the limit.
		wantLimited(t, c.get(t, "/auth/callback?state=x&code=y"))
		// Other pages do not.
		wantStatus(t, c.get(t, "/signin"), http.StatusOK)
	})

	t.Run("a spoofed X-Forwarded-For does not reset the limit without a trusted proxy", func(t *testing.T) {
		t.Parallel()
		ts := newTestServer(t, limited)
		c := ts.newClient(t)
		for i := range burst {
			r := c.get(t, "/auth/login", hdr("X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i+1)))
			wantStatus(t, r, http.StatusFound)
		}
		for i := range 3 {
			xff := hdr("X-Forwarded-For", fmt.Sprintf("203.0.113.%d", i+1), "X-Real-IP", fmt.Sprintf("192.0.2.%d", i+1))
			wantLimited(t, c.get(t, "/auth/login", xff))
		}
	})

	t.Run("behind a trusted proxy each forwarded client has its own bucket", func(t *testing.T) {
		t.Parallel()
		_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
		opts := limited
		opts.TrustedProxies = []*net.IPNet{loopback}
		ts := newTestServer(t, opts)
		c := ts.newClient(t)
		for client := 1; client <= 3; client++ {
			xff := hdr("X-Forwarded-For", fmt.Sprintf("203.0.113.%d", client))
			for i := range burst {
				if r := c.get(t, "/auth/login", xff); r.status != http.StatusFound {
					t.Fatalf("client %d attempt %d: got %d; want 302", client, i+1, r.status)
				}
			}
			wantLimited(t, c.get(t, "/auth/login", xff))
		}
		// A client cannot escape by prepending addresses of its own: the
		// rightmost untrusted address is the one that counts.
		for i := range 3 {
			xff := hdr("X-Forwarded-For", fmt.Sprintf("198.51.100.%d, 203.0.113.1", i+1))
			wantLimited(t, c.get(t, "/auth/login", xff))
		}
	})
}
