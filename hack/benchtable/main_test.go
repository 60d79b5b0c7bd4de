package main

import (
	"strings"
	"testing"
)

const planLines = `BenchmarkPlan/files=200/changed=20/impl=rego-2         	     100	   7440000 ns/op	 1000 B/op	   10 allocs/op
BenchmarkPlan/files=200/changed=20/impl=oracle-2       	     100	   6770000 ns/op	 1000 B/op	   10 allocs/op
`

const scalingLines = `BenchmarkPolicyScaling/kind=rego/policies=1/op=compile-2    	10	   4000000 ns/op	 1614381 B/op	   30000 allocs/op
BenchmarkPolicyScaling/kind=rego/policies=100/op=compile-2  	10	  20000000 ns/op	 9206580 B/op	  165000 allocs/op
BenchmarkPolicyScaling/kind=rego/policies=1000/op=compile-2 	10	 180000000 ns/op	78408413 B/op	 1380000 allocs/op
BenchmarkPolicyScaling/kind=rego/policies=1/op=plan-2       	10	   1000000 ns/op	  402613 B/op	    5300 allocs/op
BenchmarkPolicyScaling/kind=rego/policies=100/op=plan-2     	10	 200000000 ns/op	  598960 B/op	   10200 allocs/op
BenchmarkPolicyScaling/kind=rego/policies=1000/op=plan-2    	10	  20000000 ns/op	 2370947 B/op	   54300 allocs/op
`

func runString(t *testing.T, in string) string {
	t.Helper()
	var out strings.Builder
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestPlanTableUnchangedWithoutScaling(t *testing.T) {
	out := runString(t, planLines)
	if !strings.Contains(out, "rego within 3× of the oracle at files=200/changed=20 (BenchmarkPlan): met (1.10×)") {
		t.Errorf("missing the plan target:\n%s", out)
	}
	if strings.Contains(out, "BenchmarkPolicyScaling") {
		t.Errorf("scaling table without scaling results:\n%s", out)
	}
}

func TestScalingTable(t *testing.T) {
	for name, in := range map[string]string{"alone": scalingLines, "after the plan table": planLines + scalingLines} {
		t.Run(name, func(t *testing.T) {
			out := runString(t, in)
			for _, want := range []string{
				"5.00× (of 100×)", "45.00× (of 1000×)", // compile
				"200.00× (of 100×)", // plan at 100 policies: worse than linear
				"161.6µs",           // compile, per policy 1→100: 16ms / 99
				"1364",              // compile, allocations per policy 1→100: 135,000 / 99
				"NOT met (rego/plan 100/1 = 200×)",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("missing %q in:\n%s", want, out)
				}
			}
			if name != "alone" && !strings.Contains(out, "BenchmarkPlan") {
				t.Errorf("plan table missing:\n%s", out)
			}
		})
	}
}

func TestNoResults(t *testing.T) {
	if err := run(strings.NewReader("PASS\n"), &strings.Builder{}); err == nil {
		t.Error("no error without results")
	}
}

const contentLines = `BenchmarkContent/files=200/changed=20-2 	100	  47500000 ns/op	 13000000 built-ns/plan	 10500000 kept-ns/plan	 10000000 none-ns/plan	 14000000 reads-ns/plan	 1000 B/op	   10 allocs/op
`

func TestContentTable(t *testing.T) {
	for name, in := range map[string]string{"alone": contentLines, "after the plan table": planLines + contentLines} {
		out := runString(t, in)
		for _, want := range []string{"kept/none", "1.05×", "1.30×", "1.40×", "within 1.2× of the plan without contents at every size: met (at most 1.05×, files=200/changed=20)"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: missing %q:\n%s", name, want, out)
			}
		}
	}
}
