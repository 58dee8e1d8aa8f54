package handlers

import (
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"patchbay"
)

// ipLimiter is a token bucket per client IP, with idle buckets swept so
// memory stays bounded.
type ipLimiter struct {
	mu      sync.Mutex
	every   time.Duration
	burst   int
	now     func() time.Time
	buckets map[string]*bucket
	swept   time.Time
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

func newIPLimiter(every time.Duration, burst int, now func() time.Time) *ipLimiter {
	return &ipLimiter{every: every, burst: burst, now: now, buckets: map[string]*bucket{}}
}

// allow takes one token for ip and reports whether it had one, and if not
// how long until it will.
func (l *ipLimiter) allow(ip string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if now.Sub(l.swept) > time.Minute {
		idle := l.every * time.Duration(l.burst)
		for k, b := range l.buckets {
			if now.Sub(b.seen) > idle {
				delete(l.buckets, k)
			}
		}
		l.swept = now
	}
	b, ok := l.buckets[ip]
	if !ok {
		b = &bucket{lim: rate.NewLimiter(rate.Every(l.every), l.burst)}
		l.buckets[ip] = b
	}
	b.seen = now
	res := b.lim.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return false, d
	}
	return true, 0
}

// rateLimitSignIn bounds sign-in attempts per client IP. The IP comes from
// echo's extractor, which believes X-Forwarded-For only from trusted proxies.
func (s *Server) rateLimitSignIn(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ok, wait := s.limiter.allow(c.RealIP())
		if !ok {
			c.Response().Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
			return patchbay.Errorf(patchbay.ERATELIMIT, "Too many sign-in attempts. Try again in a minute.")
		}
		return next(c)
	}
}
