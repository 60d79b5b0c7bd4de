package changeset

import "sync"

// bigContents is the size from which decode keeps a file's decoded
// contents: a preview plans from the configs nodes run (the same ones for
// every preview of a pool) to a new rendering that shares most of their
// files, so a large bundle (CA certificates of 1 MB) would otherwise be
// decoded and hashed again by every preview. Small files decode faster
// than they are looked up.
const bigContents = 64 << 10

// decodedKeep is how many large decodings are kept (a few MB each at most).
const decodedKeep = 16

// sourceKey identifies decoded contents: the data URL and its compression.
// The key refers to the config's own string, not a copy.
type sourceKey struct{ source, compression string }

// decodeMemo keeps the last decodedKeep large decodings; data is shared and
// must not be written to (no user of a change set writes it).
type decodeMemo struct {
	mu    sync.Mutex
	m     map[sourceKey]*decoded
	order []sourceKey
}

var bigDecoded = &decodeMemo{m: map[sourceKey]*decoded{}}

func (c *decodeMemo) get(k sourceKey) (*decoded, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.m[k]
	return d, ok
}

func (c *decodeMemo) put(k sourceKey, d *decoded) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; ok {
		return
	}
	if len(c.order) >= decodedKeep {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	c.m[k] = d
	c.order = append(c.order, k)
}
