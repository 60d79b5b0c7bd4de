// Command benchtable reads `go test -bench 'BenchmarkPlan|BenchmarkFloor'
// -benchmem` output on stdin and prints the Rego planner's time per plan next
// to the plain-Go oracle's, with their ratio, and, where BenchmarkFloor ran,
// the floor (a plain encoding/json decode of both documents) with plan ÷
// floor; then whether the performance targets are met: the Rego planner
// within 3× of the oracle, and a plan within 2× of the floor, both at
// files=200/changed=20. BenchmarkContent results make a table of their own
// (content.go): a plan with file contents against one without, in the same
// run, with its target of 1.2×.
//
// Sub-benchmarks must be named <Benchmark>/files=N/changed=M/impl=rego|oracle,
// and BenchmarkFloor/files=N/changed=M/impl=decode; with -count > 1 the
// median of the runs is used.
package main

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"text/tabwriter"
)

const (
	targetBench   = "BenchmarkPlan"
	targetFiles   = 200
	targetChanged = "20"
	targetRatio   = 3.0
	floorBench    = "BenchmarkFloor"
	floorRatio    = 2.0
)

var line = regexp.MustCompile(`^(Benchmark\w+)/files=(\d+)/changed=(\w+)/impl=(rego|oracle|decode)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op(?:\s+([\d.]+) B/op)?(?:\s+([\d.]+) allocs/op)?`)

type key struct {
	bench   string
	files   int
	changed string
}

type runs struct{ ns, bytes, allocs []float64 }

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	results := map[key]map[string]*runs{}
	scale := scaling{}
	cont := content{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if scale.add(sc.Text()) || cont.add(sc.Text()) {
			continue
		}
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		files, _ := strconv.Atoi(m[2])
		k := key{m[1], files, m[3]}
		if results[k] == nil {
			results[k] = map[string]*runs{}
		}
		r := results[k][m[4]]
		if r == nil {
			r = &runs{}
			results[k][m[4]] = r
		}
		r.ns = append(r.ns, parse(m[5]))
		r.bytes = append(r.bytes, parse(m[6]))
		r.allocs = append(r.allocs, parse(m[7]))
	}
	if err := sc.Err(); err != nil {
		return err
	}
	// The floor is a column of the other tables, not a table of its own.
	floor := map[key]*runs{}
	for k, r := range results {
		if k.bench == floorBench {
			floor[key{files: k.files, changed: k.changed}] = r["decode"]
			delete(results, k)
		}
	}
	if len(results) == 0 {
		switch {
		case len(scale) > 0:
			return scale.print(out)
		case len(cont) > 0:
			return cont.print(out)
		}
		return fmt.Errorf("no .../files=N/changed=M/impl=rego|oracle, BenchmarkContent or BenchmarkPolicyScaling benchmark results on stdin")
	}

	keys := slices.Collect(maps.Keys(results))
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.bench != b.bench {
			// The end-to-end benchmark, which the target is about, first.
			return a.bench == targetBench || (b.bench != targetBench && a.bench < b.bench)
		}
		if a.files != b.files {
			return a.files < b.files
		}
		return changedRank(a.changed) < changedRank(b.changed)
	})

	var tw *tabwriter.Writer
	for i, k := range keys {
		if i == 0 || k.bench != keys[i-1].bench {
			if tw != nil {
				if err := tw.Flush(); err != nil {
					return err
				}
				fmt.Fprintln(out)
			}
			fmt.Fprintln(out, k.bench)
			tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprint(tw, "files\tchanged\trego/plan\toracle/plan\trego/oracle\trego allocs\toracle allocs\t")
			if len(floor) > 0 {
				fmt.Fprint(tw, "floor\trego/floor\toracle/floor\t")
			}
			fmt.Fprintln(tw)
		}
		rego, oracle := results[k]["rego"], results[k]["oracle"]
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t", k.files, k.changed,
			duration(rego), duration(oracle), ratioString(rego, oracle), allocs(rego), allocs(oracle))
		if len(floor) > 0 {
			f := floor[key{files: k.files, changed: k.changed}]
			fmt.Fprintf(tw, "%s\t%s\t%s\t", duration(f), ratioString(rego, f), ratioString(oracle, f))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	r := results[key{targetBench, targetFiles, targetChanged}]
	fmt.Fprintf(out, "\ntarget: rego within %.0f× of the oracle at files=%d/changed=%s (%s): %s\n",
		targetRatio, targetFiles, targetChanged, targetBench, verdict(r["rego"], r["oracle"], targetRatio))
	if len(floor) > 0 {
		fmt.Fprintf(out, "target: rego plan within %.0f× of the floor (a JSON decode of both documents) at files=%d/changed=%s: %s\n",
			floorRatio, targetFiles, targetChanged, verdict(r["rego"], floor[key{files: targetFiles, changed: targetChanged}], floorRatio))
	}
	if len(cont) > 0 {
		fmt.Fprintln(out)
		if err := cont.print(out); err != nil {
			return err
		}
	}
	if len(scale) > 0 {
		fmt.Fprintln(out)
		return scale.print(out)
	}
	return nil
}

func parse(s string) float64 {
	if s == "" {
		return -1 // not reported (no -benchmem)
	}
	v, _ := strconv.ParseFloat(s, 64)
	return v
}

// changedRank orders counts numerically, "all" last.
func changedRank(s string) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return 1 << 62
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func duration(r *runs) string {
	if r == nil {
		return "-"
	}
	ns := median(r.ns)
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.2fs", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.2fms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.1fµs", ns/1e3)
	}
	return fmt.Sprintf("%.0fns", ns)
}

func allocs(r *runs) string {
	if r == nil || median(r.allocs) < 0 {
		return "-"
	}
	return strconv.FormatFloat(median(r.allocs), 'f', 0, 64)
}

func ratioOf(rego, oracle *runs) (float64, bool) {
	if rego == nil || oracle == nil || median(oracle.ns) <= 0 {
		return 0, false
	}
	return median(rego.ns) / median(oracle.ns), true
}

// verdict says whether a's median time is within limit times b's: "not
// measured", "met (1.10×)" or "NOT met (3.20×)".
func verdict(a, b *runs, limit float64) string {
	switch ratio, ok := ratioOf(a, b); {
	case !ok:
		return "not measured"
	case ratio <= limit:
		return fmt.Sprintf("met (%.2f×)", ratio)
	default:
		return fmt.Sprintf("NOT met (%.2f×)", ratio)
	}
}

func ratioString(rego, oracle *runs) string {
	if r, ok := ratioOf(rego, oracle); ok {
		return fmt.Sprintf("%.2f×", r)
	}
	return "-"
}
