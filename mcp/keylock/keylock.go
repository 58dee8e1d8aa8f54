// Package keylock gives out one lock per key (an install directory, a
// connector), waited for with a context. A key's lock exists only while
// someone holds or waits for it, so one-off keys leave nothing behind.
package keylock

import (
	"context"
	"sync"
)

// Locks is a set of per-key locks. Its zero value is ready to use; it must
// not be copied after first use.
type Locks struct {
	mu sync.Mutex
	m  map[string]*entry
}

// entry is one key's lock and how many hold or wait for it.
type entry struct {
	ch    chan struct{}
	users int
}

// Lock takes key's lock, or gives up with ctx's error when ctx ends
// first. The returned function releases it.
func (l *Locks) Lock(ctx context.Context, key string) (func(), error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*entry{}
	}
	e, ok := l.m[key]
	if !ok {
		e = &entry{ch: make(chan struct{}, 1)}
		l.m[key] = e
	}
	e.users++
	l.mu.Unlock()
	release := func() {
		l.mu.Lock()
		if e.users--; e.users == 0 {
			delete(l.m, key)
		}
		l.mu.Unlock()
	}
	select {
	case e.ch <- struct{}{}:
		return func() { <-e.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}

// Len is how many keys have a lock now, held or awaited.
func (l *Locks) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}
