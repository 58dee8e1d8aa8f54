package db_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"patchbay"
	"patchbay/db"
)

// startRun starts an install run and fails the test on error.
func startRun(t *testing.T, d *db.DB, scope string, userID int64, connector string) db.InstallRun {
	t.Helper()
	r, err := d.StartInstallRun(context.Background(), db.InstallRun{Scope: scope, UserID: userID, Connector: connector, Reason: "enable"})
	if err != nil {
		t.Fatalf("StartInstallRun(%s, %d, %s): %v", scope, userID, connector, err)
	}
	return r
}

func TestInstallRunLifecycle(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	clock := useTestClock(t, d)
	started := clock.Now()

	r, err := d.StartInstallRun(ctx, db.InstallRun{Scope: db.InstallScopeGlobal, Connector: "search", Reason: "refresh",
		Hash: "h-new", Status: db.InstallSucceeded, Log: "ignored", Error: "ignored"})
	if err != nil {
		t.Fatalf("StartInstallRun: %v", err)
	}
	want := db.InstallRun{ID: r.ID, Scope: db.InstallScopeGlobal, Connector: "search", Reason: "refresh",
		Status: db.InstallRunning, Hash: "h-new", StartedAt: started}
	if !sameRun(r, want) {
		t.Errorf("StartInstallRun result: got %+v; want %+v", r, want)
	}
	latest, err := d.LatestInstallRun(ctx, db.InstallScopeGlobal, 0, "search")
	if err != nil || !sameRun(latest, want) {
		t.Errorf("LatestInstallRun while running: got %+v, %v; want %+v", latest, err, want)
	}

	clock.Advance(42 * time.Second)
	log := "added 12 packages\nverify ok\n"
	if err := d.FinishInstallRun(ctx, r.ID, db.InstallSucceeded, "h-done", log, ""); err != nil {
		t.Fatalf("FinishInstallRun: %v", err)
	}
	want.Status, want.Hash, want.Log, want.FinishedAt = db.InstallSucceeded, "h-done", log, clock.Now()
	got, err := d.InstallRunByID(ctx, r.ID)
	if err != nil || !sameRun(got, want) {
		t.Errorf("InstallRunByID after finish: got %+v, %v; want %+v", got, err, want)
	}

	t.Run("finishing twice is a conflict", func(t *testing.T) {
		err := d.FinishInstallRun(ctx, r.ID, db.InstallFailed, "", "", "late")
		wantError(t, "FinishInstallRun again", err, patchbay.ECONFLICT, "That install run has already finished.")
		if got, _ := d.InstallRunByID(ctx, r.ID); got.Status != db.InstallSucceeded || got.Error != "" {
			t.Errorf("run after second finish: got %+v; want it unchanged", got)
		}
	})

	t.Run("a failed run keeps its error", func(t *testing.T) {
		f := startRun(t, d, db.InstallScopeGlobal, 0, "search")
		if err := d.FinishInstallRun(ctx, f.ID, db.InstallFailed, "", "npm ERR! 404\n", "npm ci exited 1"); err != nil {
			t.Fatal(err)
		}
		got, err := d.LatestInstallRun(ctx, db.InstallScopeGlobal, 0, "search")
		if err != nil || got.ID != f.ID || got.Status != db.InstallFailed || got.Error != "npm ci exited 1" || got.Log != "npm ERR! 404\n" {
			t.Errorf("LatestInstallRun: got %+v, %v; want the failed run", got, err)
		}
	})

	t.Run("bad status and unknown run", func(t *testing.T) {
		u := startRun(t, d, db.InstallScopeGlobal, 0, "other")
		for _, status := range []string{db.InstallRunning, "", "done"} {
			err := d.FinishInstallRun(ctx, u.ID, status, "", "", "")
			wantError(t, fmt.Sprintf("FinishInstallRun(%q)", status), err, patchbay.EINVALID,
				fmt.Sprintf("An install run finishes as succeeded, unchanged or failed, not %q.", status))
		}
		if err := d.FinishInstallRun(ctx, u.ID, db.InstallUnchanged, "h", "", ""); err != nil {
			t.Errorf("FinishInstallRun(unchanged): %v", err)
		}
		err := d.FinishInstallRun(ctx, 9999, db.InstallSucceeded, "", "", "")
		wantError(t, "FinishInstallRun(unknown)", err, patchbay.ENOTFOUND, "No such install run.")
		_, err = d.InstallRunByID(ctx, 9999)
		wantError(t, "InstallRunByID(unknown)", err, patchbay.ENOTFOUND, "No such install run.")
		_, err = d.LatestInstallRun(ctx, db.InstallScopeGlobal, 0, "never")
		wantError(t, "LatestInstallRun(never)", err, patchbay.ENOTFOUND, `"never" has not been installed yet.`)
	})
}

// sameRun compares runs, their times with Equal.
func sameRun(a, b db.InstallRun) bool {
	ok := a.StartedAt.Equal(b.StartedAt) && a.FinishedAt.Equal(b.FinishedAt)
	a.StartedAt, a.FinishedAt = b.StartedAt, b.FinishedAt
	return ok && a == b
}

func TestStartInstallRunRefuses(t *testing.T) {
	d := openTestDB(t)
	u := signIn(t, d, "uma", "uma@example.test")
	tests := []struct {
		name    string
		r       db.InstallRun
		message string
	}{
		{"unknown scope", db.InstallRun{Scope: "team", Connector: "x"}, `An install run is global or user, not "team".`},
		{"global with a user", db.InstallRun{Scope: db.InstallScopeGlobal, UserID: u.ID, Connector: "x"}, "A global install run has no user."},
		{"user without a user", db.InstallRun{Scope: db.InstallScopeUser, Connector: "x"}, "A user's install run needs the user."},
		{"no connector", db.InstallRun{Scope: db.InstallScopeGlobal}, "An install run needs the connector's name."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := d.StartInstallRun(context.Background(), tt.r)
			wantError(t, "StartInstallRun", err, patchbay.EINVALID, tt.message)
		})
	}
	if n := countRows(t, d, "install_runs", ""); n != 0 {
		t.Errorf("install runs: got %d; want 0", n)
	}
}

func TestInstallRunsAreScoped(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	uma := signIn(t, d, "uma", "uma@example.test")
	vic := signIn(t, d, "vic", "vic@example.test")
	g1 := startRun(t, d, db.InstallScopeGlobal, 0, "notes")
	u1 := startRun(t, d, db.InstallScopeUser, uma.ID, "notes")
	v1 := startRun(t, d, db.InstallScopeUser, vic.ID, "notes")
	g2 := startRun(t, d, db.InstallScopeGlobal, 0, "notes")
	u2 := startRun(t, d, db.InstallScopeUser, uma.ID, "notes")
	startRun(t, d, db.InstallScopeUser, uma.ID, "other")
	g3 := startRun(t, d, db.InstallScopeGlobal, 0, "notes")

	ids := func(rs []db.InstallRun) []int64 {
		var out []int64
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	tests := []struct {
		name      string
		scope     string
		userID    int64
		connector string
		limit     int
		want      []int64
	}{
		{"global, all", db.InstallScopeGlobal, 0, "notes", 0, []int64{g3.ID, g2.ID, g1.ID}},
		{"global, limited", db.InstallScopeGlobal, 0, "notes", 2, []int64{g3.ID, g2.ID}},
		{"uma's", db.InstallScopeUser, uma.ID, "notes", 10, []int64{u2.ID, u1.ID}},
		{"vic's", db.InstallScopeUser, vic.ID, "notes", -1, []int64{v1.ID}},
		{"nobody's", db.InstallScopeUser, 9999, "notes", 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := d.InstallRuns(ctx, tt.scope, tt.userID, tt.connector, tt.limit)
			if err != nil || fmt.Sprint(ids(got)) != fmt.Sprint(tt.want) {
				t.Errorf("InstallRuns: got %v, %v; want %v", ids(got), err, tt.want)
			}
			latest, err := d.LatestInstallRun(ctx, tt.scope, tt.userID, tt.connector)
			if len(tt.want) == 0 {
				wantCode(t, "LatestInstallRun", err, patchbay.ENOTFOUND)
			} else if err != nil || latest.ID != tt.want[0] {
				t.Errorf("LatestInstallRun: got %d, %v; want %d", latest.ID, err, tt.want[0])
			}
		})
	}
	if u1.UserID != uma.ID || g1.UserID != 0 {
		t.Errorf("user ids: got %d and %d; want %d and 0", u1.UserID, g1.UserID, uma.ID)
	}
}

func TestFinishInstallRunTruncatesLog(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	const marker = "[earlier output truncated]\n"
	finish := func(t *testing.T, log string) string {
		t.Helper()
		r := startRun(t, d, db.InstallScopeGlobal, 0, "big")
		if err := d.FinishInstallRun(ctx, r.ID, db.InstallSucceeded, "", log, ""); err != nil {
			t.Fatalf("FinishInstallRun: %v", err)
		}
		got, err := d.InstallRunByID(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.Log
	}

	t.Run("a log at the limit is kept whole", func(t *testing.T) {
		log := strings.Repeat("x", db.InstallLogLimit-1) + "\n"
		if got := finish(t, log); got != log {
			t.Errorf("log: got %d bytes; want the %d given", len(got), len(log))
		}
	})

	t.Run("a long log keeps its last lines", func(t *testing.T) {
		var b strings.Builder
		for i := 0; b.Len() < 3*db.InstallLogLimit; i++ {
			fmt.Fprintf(&b, "line %06d: %s\n", i, strings.Repeat("é", i%50))
		}
		b.WriteString("last line without newline")
		log := b.String()
		got := finish(t, log)
		if len(got) > db.InstallLogLimit {
			t.Errorf("log: got %d bytes; want at most %d", len(got), db.InstallLogLimit)
		}
		if len(got) < db.InstallLogLimit-200 {
			t.Errorf("log: got %d bytes; want close to %d (only a partial line dropped)", len(got), db.InstallLogLimit)
		}
		body, ok := strings.CutPrefix(got, marker)
		if !ok {
			t.Fatalf("log: got %.40q...; want it to start with %q", got, marker)
		}
		if !strings.HasSuffix(log, body) {
			t.Fatal("log: the kept part is not the end of the output")
		}
		if start := len(log) - len(body); log[start-1] != '\n' || !strings.HasPrefix(body, "line ") {
			t.Errorf("log: kept part starts mid-line: %.30q", body)
		}
	})

	t.Run("one huge line is cut at a character boundary", func(t *testing.T) {
		log := "start\n" + strings.Repeat("日本", db.InstallLogLimit/3) + "\n"
		got := finish(t, log)
		body, ok := strings.CutPrefix(got, marker)
		if !ok || len(got) > db.InstallLogLimit || !strings.HasSuffix(log, body) || len(body) < db.InstallLogLimit-len(marker)-3 {
			t.Errorf("log: got %d bytes (marker %v); want the last %d bytes or so of the line", len(got), ok, db.InstallLogLimit)
		}
		if !utf8.ValidString(got) {
			t.Error("log: not valid UTF-8; want the cut on a character boundary")
		}
	})
}

func TestMarkInterruptedInstallRuns(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	clock := useTestClock(t, d)
	uma := signIn(t, d, "uma", "uma@example.test")
	a := startRun(t, d, db.InstallScopeGlobal, 0, "a")
	b := startRun(t, d, db.InstallScopeUser, uma.ID, "b")
	done := startRun(t, d, db.InstallScopeGlobal, 0, "c")
	if err := d.FinishInstallRun(ctx, done.ID, db.InstallUnchanged, "h", "", ""); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)

	n, err := d.MarkInterruptedInstallRuns(ctx)
	if err != nil || n != 2 {
		t.Fatalf("MarkInterruptedInstallRuns: got %d, %v; want 2", n, err)
	}
	for _, r := range []db.InstallRun{a, b} {
		got, err := d.InstallRunByID(ctx, r.ID)
		if err != nil || got.Status != db.InstallFailed || got.Error != "interrupted: Patchbay stopped during the install" ||
			!got.FinishedAt.Equal(clock.Now()) {
			t.Errorf("run %d: got %+v, %v; want failed, interrupted, finished now", r.ID, got, err)
		}
	}
	if got, err := d.InstallRunByID(ctx, done.ID); err != nil || got.Status != db.InstallUnchanged || got.Error != "" {
		t.Errorf("finished run: got %+v, %v; want it untouched", got, err)
	}
	if n, err := d.MarkInterruptedInstallRuns(ctx); err != nil || n != 0 {
		t.Errorf("MarkInterruptedInstallRuns again: got %d, %v; want 0", n, err)
	}
	err = d.FinishInstallRun(ctx, a.ID, db.InstallSucceeded, "", "", "")
	wantCode(t, "FinishInstallRun after interruption", err, patchbay.ECONFLICT)
}

func TestPruneInstallRuns(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	uma := signIn(t, d, "uma", "uma@example.test")
	var globalA, userA []db.InstallRun
	for range 5 {
		r := startRun(t, d, db.InstallScopeGlobal, 0, "a")
		if err := d.FinishInstallRun(ctx, r.ID, db.InstallSucceeded, "h", "", ""); err != nil {
			t.Fatal(err)
		}
		globalA = append(globalA, r)
		r = startRun(t, d, db.InstallScopeUser, uma.ID, "a")
		if err := d.FinishInstallRun(ctx, r.ID, db.InstallFailed, "", "", "boom"); err != nil {
			t.Fatal(err)
		}
		userA = append(userA, r)
	}
	other := startRun(t, d, db.InstallScopeGlobal, 0, "b")
	running := startRun(t, d, db.InstallScopeGlobal, 0, "a") // newest of a, still running

	n, err := d.PruneInstallRuns(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	// global a: running + 5 finished, keep the newest 2 (running and one
	// finished) -> 4 deleted; user a: 5, keep 2 -> 3 deleted.
	if n != 7 {
		t.Errorf("deleted %d runs; want 7", n)
	}
	ids := func(scope string, userID int64, name string) []int64 {
		runs, err := d.InstallRuns(ctx, scope, userID, name, 0)
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, r := range runs {
			out = append(out, r.ID)
		}
		return out
	}
	if got, want := ids(db.InstallScopeGlobal, 0, "a"), []int64{running.ID, globalA[4].ID}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("global a: got %v; want %v", got, want)
	}
	if got, want := ids(db.InstallScopeUser, uma.ID, "a"), []int64{userA[4].ID, userA[3].ID}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("user a: got %v; want %v", got, want)
	}
	if got := ids(db.InstallScopeGlobal, 0, "b"); len(got) != 1 || got[0] != other.ID {
		t.Errorf("b: got %v; want its one (running) run kept", got)
	}
	if _, err := d.PruneInstallRuns(ctx, 0); patchbay.ErrorCode(err) != patchbay.EINVALID {
		t.Errorf("keep 0: got %v; want EINVALID", err)
	}
}
