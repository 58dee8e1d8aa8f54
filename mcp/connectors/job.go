package connectors

import (
	"context"
	"strings"
	"sync"
)

// jobLogLimit bounds the output a job keeps in memory, like the install
// run's stored log.
const jobLogLimit = 256 << 10

// Job is one lifecycle operation (enable, refresh, activate, start) in
// flight: install output, then connection progress. Its output is
// readable while it runs, for the page that polls it, and is stored with
// its install run when it ends.
type Job struct {
	// RunID is the install run that records this job.
	RunID int64

	target target
	redact []string

	mu   sync.Mutex
	log  []byte
	part []byte
	done chan struct{}
	err  error
}

func newJob(runID int64, secrets []string) *Job {
	return &Job{RunID: runID, redact: secrets, done: make(chan struct{})}
}

// Write appends output. Secret values are redacted a whole line at a time,
// so a secret split across two writes is still caught.
func (j *Job) Write(p []byte) (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.part = append(j.part, p...)
	if i := strings.LastIndexByte(string(j.part), '\n'); i >= 0 {
		j.keep(j.part[:i+1])
		j.part = append(j.part[:0], j.part[i+1:]...)
	}
	return len(p), nil
}

// Note writes one line of Patchbay's own progress.
func (j *Job) Note(line string) { j.Write([]byte("» " + line + "\n")) }

func (j *Job) keep(lines []byte) {
	s := string(lines)
	for _, v := range j.redact {
		s = strings.ReplaceAll(s, v, "[REDACTED]")
	}
	j.log = append(j.log, s...)
	if len(j.log) > 2*jobLogLimit {
		j.log = append(j.log[:0], j.log[len(j.log)-jobLogLimit:]...)
	}
}

// Log returns the output so far.
func (j *Job) Log() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	log := j.log
	if len(log) > jobLogLimit {
		log = log[len(log)-jobLogLimit:]
	}
	return string(log)
}

// finish flushes a final partial line and marks the job done.
func (j *Job) finish(err error) {
	j.mu.Lock()
	if len(j.part) > 0 {
		j.keep(append(j.part, '\n'))
		j.part = nil
	}
	j.err = err
	j.mu.Unlock()
	close(j.done)
}

// Done is closed when the job has ended.
func (j *Job) Done() <-chan struct{} { return j.done }

// Wait blocks until the job ends or ctx does, and returns the job's error.
func (j *Job) Wait(ctx context.Context) error {
	select {
	case <-j.done:
		j.mu.Lock()
		defer j.mu.Unlock()
		return j.err
	case <-ctx.Done():
		return ctx.Err()
	}
}
