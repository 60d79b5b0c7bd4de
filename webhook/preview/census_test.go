package preview

import (
	"slices"
	"testing"
)

// The configs a preview plans from: most nodes first, ties by name; a pool
// whose nodes all run the rendered config (or none yet) is still planned
// from its target, unless that is the rendered config itself.
func TestCensusFroms(t *testing.T) {
	for _, tc := range []struct {
		name             string
		others           map[string]int
		target, rendered string
		want             []string
		pending          int
	}{
		{name: "most nodes first", others: map[string]int{"a": 1, "b": 3, "c": 2}, target: "a", rendered: "new", want: []string{"b", "c", "a"}, pending: 6},
		{name: "ties by name", others: map[string]int{"z": 2, "y": 2}, target: "z", rendered: "new", want: []string{"y", "z"}, pending: 4},
		{name: "no other config: from the target", others: map[string]int{}, target: "old", rendered: "new", want: []string{"old"}},
		{name: "target already rendered", others: map[string]int{}, target: "new", rendered: "new", want: []string{}},
		{name: "no target", others: map[string]int{}, target: "", rendered: "new", want: []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Census{Others: tc.others}
			if got := c.Froms(tc.target, tc.rendered); !slices.Equal(got, tc.want) {
				t.Errorf("Froms = %q, want %q", got, tc.want)
			}
			if got := c.Pending(); got != tc.pending {
				t.Errorf("Pending = %d, want %d", got, tc.pending)
			}
		})
	}
}
