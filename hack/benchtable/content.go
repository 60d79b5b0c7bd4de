package main

import (
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"text/tabwriter"
)

// BenchmarkContent/files=N/changed=M (planner's bench_test.go) reports
// <impl>-ns/plan for impl none, kept, built and reads, measured in turns
// within the same iterations: a plan with file contents against the same
// plan without them. The target: with the default policies (which read no
// contents) a plan stays within 1.2× of the plan without contents.

var (
	contentLine   = regexp.MustCompile(`^BenchmarkContent/files=(\d+)/changed=(\w+)(?:-\d+)?\s+\d+\s+[\d.]+ ns/op`)
	contentMetric = regexp.MustCompile(`([\d.e+]+) (none|kept|built|reads)-ns/plan`)
)

const contentRatio = 1.2

type contentKey struct {
	files   int
	changed string
}

type content map[contentKey]map[string]*runs

// add records a BenchmarkContent result line; false for any other line.
func (c content) add(text string) bool {
	m := contentLine.FindStringSubmatch(text)
	if m == nil {
		return false
	}
	files, _ := strconv.Atoi(m[1])
	k := contentKey{files, m[2]}
	if c[k] == nil {
		c[k] = map[string]*runs{}
	}
	for _, mm := range contentMetric.FindAllStringSubmatch(text, -1) {
		r := c[k][mm[2]]
		if r == nil {
			r = &runs{}
			c[k][mm[2]] = r
		}
		r.ns = append(r.ns, parse(mm[1]))
	}
	return true
}

// print writes one row per size: the plan without contents, then each way
// of planning with them and its ratio to it; then the target, at every size.
func (c content) print(out io.Writer) error {
	keys := slices.Collect(maps.Keys(c))
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].files != keys[j].files {
			return keys[i].files < keys[j].files
		}
		return changedRank(keys[i].changed) < changedRank(keys[j].changed)
	})
	fmt.Fprintln(out, "BenchmarkContent (a plan end to end; contents: none, kept but unread by the default policies, built for Rego, read by a policy)")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "files\tchanged\tno contents\tkept\tkept/none\tbuilt\tbuilt/none\treads\treads/none\t")
	worst, worstAt, measured := 0.0, contentKey{}, false
	for _, k := range keys {
		r := c[k]
		none := r["none"]
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", k.files, k.changed, duration(none),
			duration(r["kept"]), ratioString(r["kept"], none), duration(r["built"]), ratioString(r["built"], none),
			duration(r["reads"]), ratioString(r["reads"], none))
		if ratio, ok := ratioOf(r["kept"], none); ok {
			measured = true
			if ratio > worst {
				worst, worstAt = ratio, k
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	target := fmt.Sprintf("target: a plan with contents, default policies, within %.1f× of the plan without contents at every size", contentRatio)
	switch {
	case !measured:
		fmt.Fprintf(out, "%s: not measured\n", target)
	case worst <= contentRatio:
		fmt.Fprintf(out, "%s: met (at most %.2f×, files=%d/changed=%s)\n", target, worst, worstAt.files, worstAt.changed)
	default:
		fmt.Fprintf(out, "%s: NOT met (%.2f× at files=%d/changed=%s)\n", target, worst, worstAt.files, worstAt.changed)
	}
	return nil
}
