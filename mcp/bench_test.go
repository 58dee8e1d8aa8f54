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
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Benchmarks compare a tool call through the Manager with the same call on
// a bare mcp-go stdio client to the same echo test server, and ConnectAll
// of 50 servers with connecting one. Run with
//
//	go test -run '^$' -bench . -benchtime=2000x ./mcp/
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

func reportLatency(b *testing.B, d []time.Duration) {
	slices.Sort(d)
	b.ReportMetric(float64(percentile(d, 0.50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(d, 0.99).Microseconds()), "p99-µs")
}

func benchSequential(b *testing.B, call caller) {
	ctx := context.Background()
	_ = call(ctx, "warm")
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if err := call(ctx, "hello"); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(start))
	}
	b.StopTimer()
	reportLatency(b, durs)
}

// benchParallel runs b.N calls from 8 goroutines and reports throughput.
func benchParallel(b *testing.B, call caller) {
	const workers = 8
	ctx := context.Background()
	_ = call(ctx, "warm")
	var next atomic.Int64
	var mu sync.Mutex
	durs := make([]time.Duration, 0, b.N)
	var failed atomic.Value
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, b.N/workers+1)
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				if err := call(ctx, "hello"); err != nil {
					failed.Store(err)
					return
				}
				local = append(local, time.Since(t0))
			}
			mu.Lock()
			durs = append(durs, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	reportLatency(b, durs)
}

func BenchmarkCallTool(b *testing.B) {
	for _, kind := range []struct {
		name string
		mk   func(*testing.B) caller
	}{{"manager", managerCaller}, {"direct", directCaller}, {"rawio", ioCaller}} {
		b.Run(kind.name+"/seq", func(b *testing.B) { benchSequential(b, kind.mk(b)) })
		b.Run(kind.name+"/par8", func(b *testing.B) { benchParallel(b, kind.mk(b)) })
	}
}

// connectN connects n echo servers with one ConnectAll and returns its wall
// time; the manager is closed outside the measurement.
func connectN(b *testing.B, n int) time.Duration {
	m := NewManager(benchOptions())
	defer m.Close()
	specs := make([]Spec, n)
	for i := range specs {
		specs[i] = Spec{Name: fmt.Sprintf("echo%d", i), Command: filepath.Join(binDir, "echo"), Dir: b.TempDir()}
	}
	start := time.Now()
	if err := m.ConnectAll(context.Background(), specs); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// BenchmarkConnectAll50vs1 times ConnectAll of 50 echo servers against
// connecting one alone, alternating them each iteration, and reports the
// median wall times and their ratio.
func BenchmarkConnectAll50vs1(b *testing.B) {
	var one, fifty []time.Duration
	for i := 0; i < b.N; i++ {
		one = append(one, connectN(b, 1))
		fifty = append(fifty, connectN(b, 50))
	}
	slices.Sort(one)
	slices.Sort(fifty)
	m1, m50 := percentile(one, 0.5), percentile(fifty, 0.5)
	b.ReportMetric(float64(m1.Microseconds())/1000, "ms/connect-1")
	b.ReportMetric(float64(m50.Microseconds())/1000, "ms/connectall-50")
	b.ReportMetric(float64(m50)/float64(m1), "ratio-50/1")
}
