package preview

import "sync"

// bounded is a map safe for concurrent use that keeps at most max entries,
// evicting the oldest: the previewer's caches are keyed by content, so an
// entry is never stale, only unused.
type bounded[K comparable, V any] struct {
	mu      sync.Mutex
	max     int
	entries map[K]V
	order   []K // insertion order, oldest first
}

func newBounded[K comparable, V any](max int) *bounded[K, V] {
	return &bounded[K, V]{max: max, entries: make(map[K]V, max)}
}

func (b *bounded[K, V]) get(k K) (V, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.entries[k]
	return v, ok
}

func (b *bounded[K, V]) put(k K, v V) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.entries[k]; ok {
		return
	}
	b.entries[k] = v
	b.order = append(b.order, k)
	for len(b.order) > b.max {
		delete(b.entries, b.order[0])
		b.order = b.order[1:]
	}
}
