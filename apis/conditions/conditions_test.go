package conditions

import (
	"strings"
	"testing"
)

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"one too long", 11, "one too ..."},
	} {
		if got := Truncate(tc.s, tc.n); got != tc.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
	if got := Message(strings.Repeat("x", MaxMessage+1)); len(got) != MaxMessage || !strings.HasSuffix(got, "...") {
		t.Errorf("Message of %d bytes gave %d bytes", MaxMessage+1, len(got))
	}
}
