package keylock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestOneHolderPerKeyAndNothingLeftBehind(t *testing.T) {
	var l Locks
	ctx := context.Background()
	var mu sync.Mutex
	inside, most := 0, 0
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock, err := l.Lock(ctx, "a")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			inside++
			most = max(most, inside)
			mu.Unlock()
			mu.Lock()
			inside--
			mu.Unlock()
			unlock()
		}()
	}
	wg.Wait()
	if most != 1 {
		t.Errorf("at most %d holders of one key at once; want 1", most)
	}
	if n := l.Len(); n != 0 {
		t.Errorf("%d locks left after every holder released; want 0", n)
	}
}

func TestOtherKeysAreNotHeldUp(t *testing.T) {
	var l Locks
	unlockA, err := l.Lock(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	defer unlockA()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	unlockB, err := l.Lock(ctx, "b")
	if err != nil {
		t.Fatalf("key b waited on key a: %v", err)
	}
	unlockB()
}

func TestAWaiterGivesUpWithItsContext(t *testing.T) {
	var l Locks
	unlock, err := l.Lock(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := l.Lock(ctx, "a")
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled waiter: got %v; want context.Canceled", err)
	}
	unlock()
	if n := l.Len(); n != 0 {
		t.Errorf("%d locks left; want 0", n)
	}
}
