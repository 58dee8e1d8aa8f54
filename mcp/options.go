package mcp

import (
	"log/slog"
	"math/rand/v2"
	"time"
)

// Options tune supervision. Zero fields take the defaults noted; tests
// shrink the durations so nothing has to sleep for long.
type Options struct {
	// Runner runs local connectors; a LocalRunner logging to Logger if nil.
	Runner Runner
	// ConnectTimeout bounds start + initialize + tools/list (30s).
	ConnectTimeout time.Duration
	// CallTimeout bounds one tool call unless ctx ends sooner (2m).
	CallTimeout time.Duration
	// PingInterval is how often a ready server is pinged (30s).
	PingInterval time.Duration
	// PingTimeout bounds one ping (10s). It is independent of any tool
	// call in flight, so a slow call never looks like a hang.
	PingTimeout time.Duration
	// PingFailures consecutive failed pings mark a server hung (2).
	PingFailures int
	// BackoffBase and BackoffMax shape the restart delay, which doubles per
	// attempt up to the max (500ms, 30s); Jitter spreads it.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// StableAfter is the uptime after which a server's restart attempts
	// are forgotten (1m).
	StableAfter time.Duration
	// CrashLoopCount failures within CrashLoopWindow make a server failed
	// for good (5 in 2m).
	CrashLoopCount  int
	CrashLoopWindow time.Duration
	// StopGrace is how long Stop waits after closing stdin and again after
	// SIGTERM (2s).
	StopGrace time.Duration
	// Now and Rand are injected so backoff and uptime are testable;
	// time.Now and math/rand/v2 if nil. Rand returns a value in [0,1).
	Now  func() time.Time
	Rand func() float64
	// OnStateChange, if set, is called (from the session's goroutine) with
	// every new state. It must not block.
	OnStateChange func(State)
	// Logger receives supervision events; slog.Default() if nil.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Runner == nil {
		o.Runner = LocalRunner{Logger: o.Logger}
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.ConnectTimeout, 30*time.Second)
	def(&o.CallTimeout, 2*time.Minute)
	def(&o.PingInterval, 30*time.Second)
	def(&o.PingTimeout, 10*time.Second)
	def(&o.BackoffBase, 500*time.Millisecond)
	def(&o.BackoffMax, 30*time.Second)
	def(&o.StableAfter, time.Minute)
	def(&o.CrashLoopWindow, 2*time.Minute)
	def(&o.StopGrace, 2*time.Second)
	if o.PingFailures <= 0 {
		o.PingFailures = 2
	}
	if o.CrashLoopCount <= 0 {
		o.CrashLoopCount = 5
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rand == nil {
		o.Rand = rand.Float64
	}
	return o
}

// backoff returns the delay before restart attempt n (1-based): the base
// doubled per attempt, capped, with "equal jitter" (half fixed, half random)
// so that many connectors failing together do not restart in lockstep.
func (o Options) backoff(n int) time.Duration {
	d := o.BackoffBase
	for i := 1; i < n && d < o.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, o.BackoffMax)
	return d/2 + time.Duration(o.Rand()*float64(d/2))
}
