package mcp

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// barrier lets n callers through only together: if they were serialised,
// the first would wait until the deadline and report it.
type barrier struct {
	n       int
	mu      sync.Mutex
	arrived int
	all     chan struct{}
	missed  atomic.Bool
}

func newBarrier(n int) *barrier { return &barrier{n: n, all: make(chan struct{})} }

func (b *barrier) wait(within time.Duration) {
	b.mu.Lock()
	b.arrived++
	if b.arrived == b.n {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
	case <-time.After(within):
		b.missed.Store(true)
	}
}

// barrierRunner is LocalRunner whose Starts, and the Stops of the processes
// it started, pass the current barriers (if set).
type barrierRunner struct {
	starts, stops atomic.Pointer[barrier]
}

func (r *barrierRunner) Start(ctx context.Context, spec Spec) (Process, error) {
	if b := r.starts.Load(); b != nil {
		b.wait(5 * time.Second)
	}
	p, err := LocalRunner{}.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	return barrierProcess{p, r}, nil
}

type barrierProcess struct {
	Process
	r *barrierRunner
}

func (p barrierProcess) Stop(grace time.Duration) error {
	if b := p.r.stops.Load(); b != nil {
		b.wait(5 * time.Second)
	}
	return p.Process.Stop(grace)
}

// ConnectAll must start all its servers at once, and when it replaces
// running ones, stop them all at once too: nothing is started or stopped
// under a manager-wide lock or one after another.
func TestConnectAllStartsAndReplacesInParallel(t *testing.T) {
	t.Parallel()
	const n = 8
	r := &barrierRunner{}
	o := fastOptions(nil)
	o.Runner = r
	m := NewManager(o)
	t.Cleanup(func() { m.Close() })
	specs := make([]Spec, n)
	for i := range specs {
		specs[i] = stdioSpec(t, fmt.Sprintf("e%d", i), "echo", nil)
	}

	starts := newBarrier(n)
	r.starts.Store(starts)
	connect(t, m, specs...)
	if starts.missed.Load() {
		t.Fatalf("first ConnectAll: the %d starts did not overlap", n)
	}

	starts, stops := newBarrier(n), newBarrier(n)
	r.starts.Store(starts)
	r.stops.Store(stops)
	connect(t, m, specs...)
	r.stops.Store(nil)
	if stops.missed.Load() {
		t.Fatalf("replacing ConnectAll: the %d stops of the replaced servers did not overlap", n)
	}
	if starts.missed.Load() {
		t.Fatalf("replacing ConnectAll: the %d starts did not overlap", n)
	}
}
