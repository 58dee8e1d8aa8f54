package mcp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Benchmarks compare a tool call through the Manager with the same call on
// a bare mcp-go client to the same echo test server, and ConnectAll of 50
// servers with connecting one. Run with
//
//	go test -run '^$' -bench 'CallTool' -benchtime=2000x -count=3 ./mcp/
//	go test -run '^$' -bench 'ConnectAll' -benchtime=5x -count=3 ./mcp/
//
// They assert nothing about timing; docs/mcp-manager.md records results.

func benchOptions() Options {
	return Options{StopGrace: 200 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// caller is one way of calling the echo tool.
type caller func(ctx context.Context, text string) error

func managerCaller(b *testing.B) caller {
	m := NewManager(benchOptions())
	b.Cleanup(func() { m.Close() })
	spec := Spec{Name: "echo", Command: filepath.Join(binDir, "echo"), Dir: b.TempDir()}
	if err := m.ConnectAll(context.Background(), []Spec{spec}); err != nil {
		b.Fatal(err)
	}
	return func(ctx context.Context, text string) error {
		res, err := m.CallTool(ctx, "echo__echo", map[string]any{"text": text})
		if err == nil && res.IsError {
			err = fmt.Errorf("tool error")
		}
		return err
	}
}

func directCaller(b *testing.B) caller {
	dir := b.TempDir()
	c, err := client.NewStdioMCPClient(filepath.Join(binDir, "echo"), BuildStdioEnv(nil, dir))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
	if _, err := c.Initialize(context.Background(), init); err != nil {
		b.Fatal(err)
	}
	return func(ctx context.Context, text string) error {
		req := mcp.CallToolRequest{}
		req.Params.Name = "echo"
		req.Params.Arguments = map[string]any{"text": text}
		res, err := c.CallTool(ctx, req)
		if err == nil && res.IsError {
			err = fmt.Errorf("tool error")
		}
		return err
	}
}

// ioCaller is a bare mcp-go client over the same LocalRunner process and
// transport.NewIO the Manager uses, with no Session or Manager: the
// difference to "manager" is the manager's own overhead.
func ioCaller(b *testing.B) caller {
	spec := Spec{Name: "echo", Command: filepath.Join(binDir, "echo"), Dir: b.TempDir()}
	p, err := LocalRunner{}.Start(context.Background(), spec)
	if err != nil {
		b.Fatal(err)
	}
	c := client.NewClient(transport.NewIO(p.Stdout(), p.Stdin(), nil), client.WithLegacyProtocolOnly())
	b.Cleanup(func() { c.Close(); p.Stop(200 * time.Millisecond) })
	if err := c.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
	if _, err := c.Initialize(context.Background(), init); err != nil {
		b.Fatal(err)
	}
	return func(ctx context.Context, text string) error {
		req := mcp.CallToolRequest{}
		req.Params.Name = "echo"
		req.Params.Arguments = map[string]any{"text": text}
		_, err := c.CallTool(ctx, req)
		return err
	}
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p * float64(len(sorted)-1))
	return sorted[i]
}

// cpuTime is the CPU this process (the client side; servers are other
// processes) has used so far. On a shared machine it is steadier than wall
// time for comparing how much work a call costs.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// callRun is the outcome of n calls: each call's latency, the wall time
// and the client-side CPU time of them all.
type callRun struct {
	durs         []time.Duration
	elapsed, cpu time.Duration
}

// runCalls makes n calls from workers goroutines.
func runCalls(call caller, n, workers int) (callRun, error) {
	ctx := context.Background()
	var next atomic.Int64
	var mu sync.Mutex
	var failed atomic.Value
	r := callRun{durs: make([]time.Duration, 0, n)}
	cpu0 := cpuTime()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, n/workers+1)
			for next.Add(1) <= int64(n) {
				t0 := time.Now()
				if err := call(ctx, "hello"); err != nil {
					failed.Store(err)
					return
				}
				local = append(local, time.Since(t0))
			}
			mu.Lock()
			r.durs = append(r.durs, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	r.elapsed, r.cpu = time.Since(start), cpuTime()-cpu0
	slices.Sort(r.durs)
	err, _ := failed.Load().(error)
	return r, err
}

func benchCalls(b *testing.B, call caller, workers int) {
	_ = call(context.Background(), "warm")
	b.ResetTimer()
	r, err := runCalls(call, b.N, workers)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if workers > 1 {
		b.ReportMetric(float64(b.N)/r.elapsed.Seconds(), "calls/s")
	}
	b.ReportMetric(float64(percentile(r.durs, 0.50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(r.durs, 0.99).Microseconds()), "p99-µs")
	b.ReportMetric(float64(r.cpu.Nanoseconds())/1000/float64(b.N), "cpu-µs/call")
}

func BenchmarkCallTool(b *testing.B) {
	for _, kind := range []struct {
		name string
		mk   func(*testing.B) caller
	}{{"manager", managerCaller}, {"direct", directCaller}, {"rawio", ioCaller}} {
		b.Run(kind.name+"/seq", func(b *testing.B) { benchCalls(b, kind.mk(b), 1) })
		b.Run(kind.name+"/par8", func(b *testing.B) { benchCalls(b, kind.mk(b), 8) })
	}
}

// connectCost is the CPU time, per server, from ConnectAll to the servers
// being stopped and reaped: Patchbay's own and the servers'.
type connectCost struct{ self, servers time.Duration }

// connectSpecs connects specs with one ConnectAll and returns its wall
// time and CPU cost; the manager is closed outside the wall time.
func connectSpecs(b *testing.B, specs []Spec) (time.Duration, connectCost) {
	m := NewManager(benchOptions())
	self0, child0 := cpuTime(), childCPUTime()
	start := time.Now()
	if err := m.ConnectAll(context.Background(), specs); err != nil {
		b.Fatal(err)
	}
	wall := time.Since(start)
	m.Close()
	n := time.Duration(len(specs))
	return wall, connectCost{(cpuTime() - self0) / n, (childCPUTime() - child0) / n}
}

// childCPUTime is the CPU used by reaped child processes.
func childCPUTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func echoSpecs(b *testing.B, n int) []Spec {
	specs := make([]Spec, n)
	for i := range specs {
		specs[i] = Spec{Name: fmt.Sprintf("echo%d", i), Command: filepath.Join(binDir, "echo"), Dir: b.TempDir()}
	}
	return specs
}

// connectRuns collects connectSpecs results of one-alone and all-together
// runs and reports medians: wall times, their ratio and CPU per server.
type connectRuns struct{ one, all, self, servers []time.Duration }

func (c *connectRuns) add(one, all time.Duration, cost connectCost) {
	c.one, c.all = append(c.one, one), append(c.all, all)
	c.self, c.servers = append(c.self, cost.self), append(c.servers, cost.servers)
}

func (c *connectRuns) report(b *testing.B, n int) {
	for _, d := range [][]time.Duration{c.one, c.all, c.self, c.servers} {
		slices.Sort(d)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	m1, mn := percentile(c.one, 0.5), percentile(c.all, 0.5)
	b.ReportMetric(ms(m1), "ms/connect-1")
	b.ReportMetric(ms(mn), fmt.Sprintf("ms/connectall-%d", n))
	b.ReportMetric(float64(mn)/float64(m1), fmt.Sprintf("ratio-%d/1", n))
	b.ReportMetric(ms(percentile(c.self, 0.5)), "patchbay-cpu-ms/server")
	b.ReportMetric(ms(percentile(c.servers, 0.5)), "server-cpu-ms/server")
}

// BenchmarkConnectAll50vs1 times ConnectAll of 50 echo servers against
// connecting one alone, alternating them each iteration. An echo server
// only computes while it starts (server-cpu-ms/server), and Patchbay spends
// CPU on each connect too (patchbay-cpu-ms/server), so on few cores this
// measures 50 start-ups competing for the CPU, not waiting.
func BenchmarkConnectAll50vs1(b *testing.B) {
	var runs connectRuns
	for i := 0; i < b.N; i++ {
		one, _ := connectSpecs(b, echoSpecs(b, 1))
		all, cost := connectSpecs(b, echoSpecs(b, 50))
		runs.add(one, all, cost)
	}
	runs.report(b, 50)
}

// BenchmarkConnectAll50Slowest is the realistic case: servers that spend
// their start-up waiting (loading, reaching an API) rather than computing.
// 49 slowstart servers take 100–300 ms and one takes 1 s; ConnectAll of
// all 50 is compared with connecting the 1 s one alone. If connects
// overlap, the ratio is close to 1.
func BenchmarkConnectAll50Slowest(b *testing.B) {
	const slowest = 1000
	slow := func(name string, ms int) Spec {
		return Spec{Name: name, Command: filepath.Join(binDir, "slowstart"), Dir: b.TempDir(),
			Env: map[string]string{"SLOW_MS": fmt.Sprint(ms)}}
	}
	var runs connectRuns
	for i := 0; i < b.N; i++ {
		one, _ := connectSpecs(b, []Spec{slow("slowest", slowest)})
		specs := []Spec{slow("slowest", slowest)}
		for j := 0; j < 49; j++ {
			specs = append(specs, slow(fmt.Sprintf("s%d", j), 100+j*200/48))
		}
		all, cost := connectSpecs(b, specs)
		runs.add(one, all, cost)
	}
	runs.report(b, 50)
}
