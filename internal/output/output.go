// Package output collects what a child process prints (ndp-daemon,
// ndp-controller, a systemd manager) for tests and the local cluster, which
// read it while the process still writes.
package output

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe for one writer and concurrent readers.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
