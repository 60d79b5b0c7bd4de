package main

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// BenchmarkPolicyScaling/kind=K/policies=N/op=compile|plan (planner's
// scaling_bench_test.go): time per op for each policy count, with the
// ratios to policies=1, which must not grow faster than the number of
// policies.

var scalingLine = regexp.MustCompile(`^BenchmarkPolicyScaling/kind=(\w+)/policies=(\d+)/op=(\w+)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op(?:\s+([\d.]+) B/op)?(?:\s+([\d.]+) allocs/op)?`)

type scalingKey struct{ kind, op string }

type scaling map[scalingKey]map[int]*runs

// add records a BenchmarkPolicyScaling result line; false for any other line.
func (s scaling) add(text string) bool {
	m := scalingLine.FindStringSubmatch(text)
	if m == nil {
		return false
	}
	n, _ := strconv.Atoi(m[2])
	k := scalingKey{m[1], m[3]}
	if s[k] == nil {
		s[k] = map[int]*runs{}
	}
	r := s[k][n]
	if r == nil {
		r = &runs{}
		s[k][n] = r
	}
	r.ns = append(r.ns, parse(m[4]))
	r.bytes = append(r.bytes, parse(m[5]))
	r.allocs = append(r.allocs, parse(m[6]))
	return true
}

// print writes one row per kind and op: the time per op at each policy
// count, the ratio of each count to the smallest beside the ratio of the
// counts (linear growth keeps the first at or below the second; a fixed
// cost such as the default policy keeps it well below), and the cost of
// each added policy between consecutive counts, in time and allocations
// (about equal when linear).
func (s scaling) print(out io.Writer) error {
	countSet := map[int]bool{}
	for _, byN := range s {
		for n := range byN {
			countSet[n] = true
		}
	}
	counts := make([]int, 0, len(countSet))
	for n := range countSet {
		counts = append(counts, n)
	}
	slices.Sort(counts)
	keys := make([]scalingKey, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b scalingKey) int {
		if a.kind != b.kind {
			return cmpString(a.kind, b.kind)
		}
		return cmpString(a.op, b.op)
	})

	fmt.Fprintln(out, "BenchmarkPolicyScaling (time per op; ratio to policies="+strconv.Itoa(counts[0])+" vs the ratio of policies; time and allocations per added policy)")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "kind\top\t")
	for _, n := range counts {
		fmt.Fprintf(tw, "policies=%d\t", n)
	}
	for _, n := range counts[1:] {
		fmt.Fprintf(tw, "%d/%d\t", n, counts[0])
	}
	for i := 1; i < len(counts); i++ {
		fmt.Fprintf(tw, "per policy %d→%d\t", counts[i-1], counts[i])
	}
	for i := 1; i < len(counts); i++ {
		fmt.Fprintf(tw, "allocs/policy %d→%d\t", counts[i-1], counts[i])
	}
	fmt.Fprintln(tw)
	var worse []string
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\t", k.kind, k.op)
		for _, n := range counts {
			fmt.Fprintf(tw, "%s\t", duration(s[k][n]))
		}
		base := s[k][counts[0]]
		for _, n := range counts[1:] {
			r, ok := ratioOf(s[k][n], base)
			if !ok {
				fmt.Fprint(tw, "-\t")
				continue
			}
			limit := float64(n) / float64(counts[0])
			fmt.Fprintf(tw, "%.2f× (of %.0f×)\t", r, limit)
			if r > limit {
				worse = append(worse, fmt.Sprintf("%s/%s %d/%d = %.0f×", k.kind, k.op, n, counts[0], r))
			}
		}
		for i := 1; i < len(counts); i++ {
			lo, hi := s[k][counts[i-1]], s[k][counts[i]]
			if lo == nil || hi == nil {
				fmt.Fprint(tw, "-\t")
				continue
			}
			fmt.Fprintf(tw, "%.1fµs\t", (median(hi.ns)-median(lo.ns))/float64(counts[i]-counts[i-1])/1e3)
		}
		// Allocations do not depend on the machine's load: equal counts per
		// added policy show linear growth when the times are noisy.
		for i := 1; i < len(counts); i++ {
			lo, hi := s[k][counts[i-1]], s[k][counts[i]]
			if lo == nil || hi == nil || median(lo.allocs) < 0 || median(hi.allocs) < 0 {
				fmt.Fprint(tw, "-\t")
				continue
			}
			fmt.Fprintf(tw, "%.0f\t", (median(hi.allocs)-median(lo.allocs))/float64(counts[i]-counts[i-1]))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(worse) > 0 {
		fmt.Fprintf(out, "\ntarget: policy scaling no worse than linear: NOT met (%s)\n", strings.Join(worse, ", "))
	} else {
		fmt.Fprintln(out, "\ntarget: policy scaling no worse than linear: met")
	}
	return nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
