package mcorules_test

import (
	"os"
	"strconv"
	"testing"
)

// The generator is deterministic (the recording depends on it) and every
// class makes cases that differ from one another.
func TestMutationGeneratorIsDeterministic(t *testing.T) {
	bs, err := loadBases()
	if err != nil {
		t.Fatal(err)
	}
	n, step := agreementCases, 37
	if s := os.Getenv("NDP_AGREEMENT_GENERATE_ALL"); s != "" {
		step, _ = strconv.Atoi(s)
	}
	seen := map[string]map[string]bool{}
	for i := 0; i < n; i += step {
		a, b := generateCase(i, bs, -1, nil), generateCase(i, bs, -1, nil)
		if a.Digest() != b.Digest() {
			t.Fatalf("case %d (%s): two generations differ", i, a.Class)
		}
		if seen[a.Class] == nil {
			seen[a.Class] = map[string]bool{}
		}
		seen[a.Class][a.Digest()] = true
	}
	for _, c := range classes {
		if len(seen[c.name]) < 2 {
			t.Errorf("class %s: %d distinct cases in the sample", c.name, len(seen[c.name]))
		}
	}
}
