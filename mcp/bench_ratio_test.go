package mcp

import (
	"slices"
	"testing"
)

// BenchmarkCallToolInterleaved measures the manager's overhead as ratios to
// rawio (the same transport without the manager) and direct (mcp-go's own
// stdio client). The callers take turns in rounds, each starting first in
// turn, so a noisy neighbour on a shared machine slows them all alike; run
// one after another (BenchmarkCallTool) they see different neighbours. b.N
// is the number of rounds; each round makes block sequential and block
// 8-way calls per caller. Every figure is the median over rounds.
//
//	go test -run '^$' -bench CallToolInterleaved -benchtime=20x -count=3 ./mcp/
func BenchmarkCallToolInterleaved(b *testing.B) {
	const block = 200
	names := []string{"manager", "rawio", "direct"}
	callers := []caller{managerCaller(b), ioCaller(b), directCaller(b)}
	type series struct{ p50, p99, tput, cpu []float64 }
	seq := make([]series, len(callers))
	par := make([]series, len(callers))
	add := func(s *series, r callRun) {
		s.p50 = append(s.p50, float64(percentile(r.durs, 0.50).Microseconds()))
		s.p99 = append(s.p99, float64(percentile(r.durs, 0.99).Microseconds()))
		s.tput = append(s.tput, float64(len(r.durs))/r.elapsed.Seconds())
		s.cpu = append(s.cpu, float64(r.cpu.Nanoseconds())/1000/float64(len(r.durs)))
	}
	for _, c := range callers {
		if _, err := runCalls(c, 100, 8); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for round := 0; round < b.N; round++ {
		for k := range callers {
			i := (round + k) % len(callers)
			r, err := runCalls(callers[i], block, 1)
			if err != nil {
				b.Fatal(err)
			}
			add(&seq[i], r)
			if r, err = runCalls(callers[i], block, 8); err != nil {
				b.Fatal(err)
			}
			add(&par[i], r)
		}
	}
	b.StopTimer()

	for i, n := range names {
		b.ReportMetric(median(seq[i].p50), n+"-p50-µs")
		b.ReportMetric(median(seq[i].p99), n+"-p99-µs")
		b.ReportMetric(median(par[i].tput), n+"-par8-calls/s")
	}
	const mgr, raw, direct = 0, 1, 2
	ratio := func(s []series, other int, f func(series) []float64) float64 {
		return median(f(s[mgr])) / median(f(s[other]))
	}
	p50 := func(s series) []float64 { return s.p50 }
	p99 := func(s series) []float64 { return s.p99 }
	tput := func(s series) []float64 { return s.tput }
	cpu := func(s series) []float64 { return s.cpu }
	b.ReportMetric(ratio(seq, raw, p50), "mgr/rawio-p50")
	b.ReportMetric(ratio(seq, raw, p99), "mgr/rawio-p99")
	b.ReportMetric(ratio(par, raw, tput), "mgr/rawio-par8-tput")
	b.ReportMetric(ratio(seq, raw, cpu), "mgr/rawio-cpu")
	b.ReportMetric(ratio(par, raw, cpu), "mgr/rawio-par8-cpu")
	b.ReportMetric(ratio(seq, direct, p50), "mgr/direct-p50")
	b.ReportMetric(ratio(seq, direct, p99), "mgr/direct-p99")
	b.ReportMetric(ratio(par, direct, tput), "mgr/direct-par8-tput")
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
