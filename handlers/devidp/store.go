package devidp

import "time"

// sweepInterval bounds how often a store scans for expired entries when it
// is not full.
const sweepInterval = 30 * time.Second

// ttlStore is a size-capped map whose entries expire. It is not safe for
// concurrent use; Provider guards all stores with Provider.mu.
type ttlStore[V any] struct {
	max       int
	m         map[string]ttlEntry[V]
	lastSweep time.Time
}

type ttlEntry[V any] struct {
	v   V
	exp time.Time
}

func newTTLStore[V any](max int) *ttlStore[V] {
	return &ttlStore[V]{max: max, m: make(map[string]ttlEntry[V])}
}

// put stores v under key until exp. When the store is full after removing
// expired entries, the entries closest to expiry are evicted, so memory
// stays bounded by max.
func (s *ttlStore[V]) put(now time.Time, key string, v V, exp time.Time) {
	if len(s.m) >= s.max || now.Sub(s.lastSweep) >= sweepInterval || now.Before(s.lastSweep) {
		s.sweep(now)
	}
	for len(s.m) >= s.max {
		var oldest string
		var oldestExp time.Time
		first := true
		for k, e := range s.m {
			if first || e.exp.Before(oldestExp) {
				oldest, oldestExp, first = k, e.exp, false
			}
		}
		delete(s.m, oldest)
	}
	s.m[key] = ttlEntry[V]{v: v, exp: exp}
}

// get returns the live entry under key. Expired entries are removed and
// reported as absent.
func (s *ttlStore[V]) get(now time.Time, key string) (V, bool) {
	e, ok := s.m[key]
	if !ok {
		var zero V
		return zero, false
	}
	if !now.Before(e.exp) {
		delete(s.m, key)
		var zero V
		return zero, false
	}
	return e.v, true
}

func (s *ttlStore[V]) remove(key string) { delete(s.m, key) }

func (s *ttlStore[V]) len() int { return len(s.m) }

func (s *ttlStore[V]) sweep(now time.Time) {
	for k, e := range s.m {
		if !now.Before(e.exp) {
			delete(s.m, k)
		}
	}
	s.lastSweep = now
}
