//go:build scale

package scale

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func secs(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

func ms(d time.Duration) string {
	if d >= 10*time.Second {
		return secs(d)
	}
	return fmt.Sprintf("%dms", d.Milliseconds())
}

func mib(b float64) string { return fmt.Sprintf("%.0f MiB", b/(1<<20)) }

// report prints the figures as tables and a plot, and writes them as
// Markdown (with Mermaid charts) to NDP_SCALE_REPORT or a temporary file.
func (r *run) report() {
	var text, md strings.Builder
	cfg := r.cfg
	budget := 0
	var budgets []string
	for _, pool := range r.pools {
		budget += r.budgets[pool]
		budgets = append(budgets, fmt.Sprintf("%d", r.budgets[pool]))
	}
	nodes := float64(cfg.nodes)
	header := fmt.Sprintf("%d nodes in %d pools (%s per pool), maxUnavailable %s = %s nodes per pool; simulated restart %s, reboot %s (node NotReady), %d pods per node; %d daemon workers",
		cfg.nodes, len(r.pools), poolSizes(r), cfg.maxUnavailable.String(), strings.Join(dedupe(budgets), "/"), cfg.restart, cfg.reboot, cfg.pods, cfg.workers)
	fmt.Fprintf(&text, "\nscale: %s\n\n", header)

	// Time.
	fmt.Fprintf(&text, "%-8s %-26s %6s %6s %5s %8s %8s %8s %8s %8s %8s %6s %8s %8s %6s %5s\n",
		"change", "plan", "nodes", "budget", "waves", "time", "1st out", "status", "node p50", "node p90", "ideal", "ratio", "out p50", "ideal", "ratio", "use")
	md.WriteString("| change | plan | nodes | budget per pool | waves | time to complete | first node out | pools report Updated | node's own update p50 / p90 | ideal (waves × p50) | time ÷ ideal | time out p50 | ideal by time out | ÷ | budget use |\n")
	md.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, res := range r.results {
		plan := strings.Join(res.plans, " | ")
		ratio, ratioSlot := float64(res.total)/float64(res.ideal), float64(res.total)/float64(res.idealSlot)
		fmt.Fprintf(&text, "%-8s %-26s %6d %6s %5d %8s %8s %8s %8s %8s %8s %5.1f× %8s %8s %5.1f× %4.0f%%\n",
			res.change.name, plan, res.nodes, strings.Join(dedupe(budgets), "/"), res.waves, secs(res.total), secs(res.firstOut), secs(res.poolStatus),
			ms(res.node.p50), ms(res.node.p90), secs(res.ideal), ratio, ms(res.slot.p50), secs(res.idealSlot), ratioSlot, 100*res.util)
		fmt.Fprintf(&md, "| %s | %s | %d | %s | %d | %s | %s | %s | %s / %s | %s | %.1f× | %s | %s | %.1f× | %.0f%% |\n",
			res.change.name, plan, res.nodes, strings.Join(dedupe(budgets), "/"), res.waves, secs(res.total), secs(res.firstOut), secs(res.poolStatus),
			ms(res.node.p50), ms(res.node.p90), secs(res.ideal), ratio, ms(res.slot.p50), secs(res.idealSlot), ratioSlot, 100*res.util)
	}

	// Budget.
	fmt.Fprintf(&text, "\npeak unavailable per pool (from a watch of every node) vs budget:\n")
	md.WriteString("\n**Peak unavailable nodes per pool** (a watch of every node, counting as the rollout controller does: updating, not Ready, cordoned or degraded):\n\n| change |")
	for _, pool := range r.pools {
		fmt.Fprintf(&md, " %s |", pool)
	}
	md.WriteString(" verdict |\n|---|" + strings.Repeat("---|", len(r.pools)) + "---|\n")
	for _, res := range r.results {
		var parts []string
		fmt.Fprintf(&md, "| %s |", res.change.name)
		ok := true
		for _, pool := range r.pools {
			p := res.peaks[pool]
			parts = append(parts, fmt.Sprintf("%s %d/%d", pool, p.peak, r.budgets[pool]))
			fmt.Fprintf(&md, " %d / %d |", p.peak, r.budgets[pool])
			ok = ok && p.peak <= r.budgets[pool]
		}
		verdict := "never over budget"
		if !ok {
			verdict = "OVER BUDGET: FAIL"
		}
		fmt.Fprintf(&text, "  %-8s %s  %s\n", res.change.name, strings.Join(parts, ", "), verdict)
		fmt.Fprintf(&md, " %s |\n", verdict)
	}

	// Requests.
	fmt.Fprintf(&text, "\nAPI requests per node (apiserver_request_total; the daemons and the harness counted on their clients, the controller by its rest_client_requests_total):\n")
	fmt.Fprintf(&text, "%-8s %9s %9s %11s %9s %9s   %s\n", "change", "apiserver", "daemons", "controller", "harness", "latency", "daemon requests per node by verb and resource (latency: a daemon request's mean)")
	md.WriteString("\n**API requests per node** (the API server's `apiserver_request_total`; the daemons' counted on their client; the controller's from its `rest_client_requests_total`; the harness — simulated kubelets, the watch — on its own client):\n\n")
	md.WriteString("| change | API server | daemons | controller | harness | a daemon request's mean latency | daemon requests per node |\n|---|---|---|---|---|---|---|\n")
	for _, res := range r.results {
		b, a := res.before, res.after
		api := (a.api - b.api) / nodes
		dm := float64(a.daemons-b.daemons) / nodes
		ct := (a.ctrlRequests - b.ctrlRequests) / nodes
		hs := float64(a.harness-b.harness) / nodes
		by := map[string]float64{}
		for k, v := range a.daemonsBy {
			by[k] = float64(v - b.daemonsBy[k])
		}
		top := topN(by, 8, nodes)
		lat := "-"
		if n := a.daemonTimed - b.daemonTimed; n > 0 {
			lat = ms((a.daemonLatency - b.daemonLatency) / time.Duration(n))
		}
		fmt.Fprintf(&text, "%-8s %9.1f %9.1f %11.2f %9.1f %9s   %s\n", res.change.name, api, dm, ct, hs, lat, top)
		fmt.Fprintf(&md, "| %s | %.1f | %.1f | %.2f | %.1f | %s | %s |\n", res.change.name, api, dm, ct, hs, lat, top)
	}
	fmt.Fprintf(&text, "\nAPI server requests per node by verb and resource:\n")
	for _, res := range r.results {
		by := map[string]float64{}
		for k, v := range res.after.apiBy {
			by[k] = v - res.before.apiBy[k]
		}
		fmt.Fprintf(&text, "  %-8s %s\n", res.change.name, topN(by, 10, nodes))
	}

	// CPU and memory.
	fmt.Fprintf(&text, "\nCPU seconds (and per node) during each change; ndp-controller is a process of its own:\n")
	fmt.Fprintf(&text, "%-8s %16s %12s %14s %14s %12s\n", "change", "ndp-controller", "ctrl RSS", "kube-apiserver", "etcd", "test process")
	md.WriteString("\n**CPU seconds during each change** (2 shared cores; the test process holds the 1,000 daemons, the simulated kubelets and the watch):\n\n")
	md.WriteString("| change | ndp-controller | controller RSS at end | kube-apiserver | etcd | test process (daemons + harness) |\n|---|---|---|---|---|---|\n")
	for _, res := range r.results {
		b, a := res.before, res.after
		cpu := func(x, y procStat) string {
			d := (y.cpu - x.cpu).Seconds()
			return fmt.Sprintf("%.1f (%.0f ms/node)", d, 1000*d/nodes)
		}
		fmt.Fprintf(&text, "%-8s %16s %12s %14s %14s %12s\n", res.change.name, cpu(b.ctrl, a.ctrl), mib(a.ctrlRSS), cpu(b.apiserver, a.apiserver), cpu(b.etcd, a.etcd), cpu(b.self, a.self))
		fmt.Fprintf(&md, "| %s | %s | %s | %s | %s | %s |\n", res.change.name, cpu(b.ctrl, a.ctrl), mib(a.ctrlRSS), cpu(b.apiserver, a.apiserver), cpu(b.etcd, a.etcd), cpu(b.self, a.self))
	}
	fmt.Fprintf(&text, "\nndp-controller's reconcilers during each change: reconciles, mean time, busy (reconcile time ÷ the change's time; over 100%% when a controller runs several workers: plan one per core, rollout 4):\n")
	md.WriteString("\n**ndp-controller's reconcilers** (reconciles, mean reconcile time, and reconcile time ÷ the change's time: a single worker at 100% is saturated; plan runs one worker per core, rollout 4):\n\n| change | " + strings.Join(controllerNames, " | ") + " |\n|---|" + strings.Repeat("---|", len(controllerNames)) + "\n")
	for _, res := range r.results {
		b, a := res.before, res.after
		var parts, cells []string
		for _, name := range controllerNames {
			n := a.ctrlReconciles[name] - b.ctrlReconciles[name]
			sec := a.ctrlReconcileTime[name] - b.ctrlReconcileTime[name]
			mean := 0.0
			if n > 0 {
				mean = 1000 * sec / n
			}
			cell := fmt.Sprintf("%.0f, %.0f ms, %.0f%%", n, mean, 100*sec/res.total.Seconds())
			parts = append(parts, name+" "+cell)
			cells = append(cells, cell)
		}
		fmt.Fprintf(&text, "  %-8s %s\n", res.change.name, strings.Join(parts, "; "))
		fmt.Fprintf(&md, "| %s | %s |\n", res.change.name, strings.Join(cells, " | "))
	}
	if len(r.results) > 0 {
		last := r.results[len(r.results)-1].after
		span := "over the whole run" // what the last process's counters cover
		if r.ctrlStarts > 1 {
			span = fmt.Sprintf("in its last process (of %d)", r.ctrlStarts)
		}
		fmt.Fprintf(&text, "ndp-controller %s: %.1f CPU seconds (process_cpu_seconds_total %.1f), peak RSS %s (VmHWM), RSS now %s\n",
			span, last.ctrl.cpu.Seconds(), last.ctrlCPU, mib(float64(last.ctrl.hwm)), mib(float64(last.ctrl.rss)))
		fmt.Fprintf(&md, "\nndp-controller %s (setup included): %.1f CPU seconds, peak RSS %s.\n", span, last.ctrl.cpu.Seconds(), mib(float64(last.ctrl.hwm)))
	}
	if lines := policyCost(r.results, nodes); len(lines) > 0 {
		fmt.Fprintf(&text, "\nA RolloutPolicy on every pool, against the same change without (this run; target: controller CPU within 10%%):\n")
		md.WriteString("\n**A RolloutPolicy on every pool** against the same change without it, in this run (target: ndp-controller's CPU within 10 %):\n\n")
		md.WriteString("| change | against | API requests per node | the controller's per node | ndp-controller CPU | verdict |\n|---|---|---|---|---|---|\n")
		for _, l := range lines {
			fmt.Fprintf(&text, "  %s\n", l.text)
			md.WriteString(l.md + "\n")
		}
	}
	syncs, errs := r.fleet.errorSummary()
	fmt.Fprintf(&text, "daemon Syncs: %d (%.1f per node per change), errors retried: %d kinds %v\n", syncs, float64(syncs)/nodes/float64(max(1, len(r.results))), len(errs), errs)

	// The plot.
	series := r.tracker.series()
	end := time.Duration(0)
	for _, res := range r.results {
		end = max(end, res.end)
	}
	origin := r.origin.Sub(r.tracker.origin)
	text.WriteString("\n" + asciiPlot(series, origin, end, budget, r.results))
	md.WriteString("\n" + mermaidPlots(series, origin, end, budget, cfg, r.results))

	fmt.Print(text.String())
	path := cfg.report
	if path == "" {
		path = filepath.Join(os.TempDir(), fmt.Sprintf("ndp-scale-%d.md", os.Getpid()))
	}
	out := "<!-- " + header + " -->\n\n" + md.String()
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		r.t.Errorf("writing the report: %v", err)
	} else {
		fmt.Printf("\nscale: the figures as Markdown are in %s\n", path)
	}
}

// controllerNames are ndp-controller's controllers, as their metrics name them.
var controllerNames = []string{"rollout", "plan", "poolstatus", "render", "clusteroperator", "registries"}

func poolSizes(r *run) string {
	var s []string
	for _, pool := range r.pools {
		s = append(s, fmt.Sprintf("%d", r.poolNodes[pool]))
	}
	return strings.Join(dedupe(s), "/")
}

func dedupe(s []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// buckets turns the step-function series into n buckets from origin to
// end: the most nodes out, and the nodes updated at each bucket's end.
func buckets(series []sample, origin, end time.Duration, n int) (width time.Duration, out, updated []int) {
	span := end - origin
	width = span / time.Duration(n)
	// A round width: 1, 2, 5, 10, ... seconds.
	for _, w := range []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 20 * time.Second, 30 * time.Second, time.Minute} {
		if span/w <= time.Duration(n) {
			width = w
			break
		}
	}
	k := int(math.Ceil(float64(span) / float64(width)))
	out, updated = make([]int, k), make([]int, k)
	cur, curUpd := 0, 0
	i := 0
	for ; i < len(series) && series[i].at <= origin; i++ {
		cur, curUpd = series[i].unavailable, series[i].updated
	}
	for b := 0; b < k; b++ {
		hi := origin + time.Duration(b+1)*width
		m := cur
		for ; i < len(series) && series[i].at < hi; i++ {
			cur, curUpd = series[i].unavailable, series[i].updated
			m = max(m, cur)
		}
		out[b], updated[b] = m, curUpd
	}
	return width, out, updated
}

// asciiPlot draws nodes out over time, a column per bucket.
func asciiPlot(series []sample, origin, end time.Duration, budget int, results []*result) string {
	const cols, rows = 72, 12
	width, out, _ := buckets(series, origin, end, cols)
	top := budget
	for _, v := range out {
		top = max(top, v)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "nodes unavailable (all pools; budget %d in all), one column per %s:\n", budget, width)
	for row := rows; row >= 1; row-- {
		lo := float64(top) * float64(row-1) / rows
		label := ""
		if row == rows {
			label = fmt.Sprintf("%d", top)
		}
		budgetRow := int(math.Ceil(float64(budget)*rows/float64(top))) == row
		fmt.Fprintf(&b, "%5s |", label)
		for _, v := range out {
			switch {
			case float64(v) > lo:
				b.WriteByte('#')
			case budgetRow:
				b.WriteByte('-')
			default:
				b.WriteByte(' ')
			}
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "%5s +%s\n", "0", strings.Repeat("-", len(out)))
	marks := []byte(strings.Repeat(" ", len(out)+1))
	for _, res := range results {
		if i := int((res.start) / width); i >= 0 && i < len(marks) {
			marks[i] = res.change.name[0]
		}
	}
	fmt.Fprintf(&b, "%5s  %s  (N, R, R: where each change starts; %s in all)\n", "", string(marks), secs(end-origin))
	return b.String()
}

// mermaidPlots renders the series as Mermaid xychart-beta line charts,
// which GitHub renders.
func mermaidPlots(series []sample, origin, end time.Duration, budget int, cfg config, results []*result) string {
	width, out, updated := buckets(series, origin, end, 60)
	var xs, us, ds, bs []string
	for i := range out {
		xs = append(xs, fmt.Sprintf("%d", int((time.Duration(i+1)*width).Seconds())))
		us = append(us, fmt.Sprintf("%d", out[i]))
		ds = append(ds, fmt.Sprintf("%d", updated[i]))
		bs = append(bs, fmt.Sprintf("%d", budget))
	}
	var starts []string
	for _, res := range results {
		starts = append(starts, fmt.Sprintf("%s at %s", res.change.name, secs(res.start)))
	}
	top := budget
	for _, v := range out {
		top = max(top, v)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Nodes unavailable at once, all pools together (the most in each %s; the flat line is the sum of the pools' budgets, %d). The changes start %s:\n\n", width, budget, strings.Join(starts, ", "))
	fmt.Fprintf(&b, "```mermaid\nxychart-beta\n    title \"%d nodes, %d pools, maxUnavailable %s: nodes updating\"\n", cfg.nodes, cfg.pools, cfg.maxUnavailable.String())
	fmt.Fprintf(&b, "    x-axis \"seconds since the first change\" [%s]\n", strings.Join(xs, ", "))
	fmt.Fprintf(&b, "    y-axis \"nodes unavailable\" 0 --> %d\n", int(math.Ceil(float64(top)*1.1)))
	fmt.Fprintf(&b, "    line [%s]\n    line [%s]\n```\n\n", strings.Join(us, ", "), strings.Join(bs, ", "))
	fmt.Fprintf(&b, "Nodes running their pool's newest target (each change starts again from 0):\n\n")
	fmt.Fprintf(&b, "```mermaid\nxychart-beta\n    title \"%d nodes: nodes updated\"\n", cfg.nodes)
	fmt.Fprintf(&b, "    x-axis \"seconds since the first change\" [%s]\n", strings.Join(xs, ", "))
	fmt.Fprintf(&b, "    y-axis \"nodes updated\" 0 --> %d\n", cfg.nodes)
	fmt.Fprintf(&b, "    line [%s]\n```\n", strings.Join(ds, ", "))
	return b.String()
}

// costLine is one line of policyCost, as text and as a Markdown row.
type costLine struct{ text, md string }

// policyCost compares, for each change X run under the policy, the mean
// of its "X + policy" runs (one per round; the policy that gates every
// pool, whose target is 10 %) and of its "X + pacing" runs (the same
// policy waiting for drained pods too: its cost is stated, the target is
// the gates') with the mean of its "X again" runs (without a policy), all
// on fresh controllers: requests per node (the API server's, the
// controller's) and the controller's CPU. X itself ran on the first
// controller after other changes: not a like-for-like baseline.
func policyCost(results []*result, nodes float64) []costLine {
	type variant struct{ base, suffix string }
	var variants []variant
	with, without := map[variant][]*result{}, map[string][]*result{}
	for _, res := range results {
		name, _, _ := strings.Cut(res.change.name, " (") // a round's "(2)"
		if base, ok := strings.CutSuffix(name, " again"); ok {
			without[base] = append(without[base], res)
			continue
		}
		for _, suffix := range []string{" + policy", " + pacing"} {
			if base, ok := strings.CutSuffix(name, suffix); ok {
				v := variant{base, suffix}
				if len(with[v]) == 0 {
					variants = append(variants, v)
				}
				with[v] = append(with[v], res)
			}
		}
	}
	api := func(res *result) float64 { return (res.after.api - res.before.api) / nodes }
	ctrlReq := func(res *result) float64 { return (res.after.ctrlRequests - res.before.ctrlRequests) / nodes }
	cpu := func(res *result) float64 { return (res.after.ctrl.cpu - res.before.ctrl.cpu).Seconds() }
	mean := func(rs []*result, f func(*result) float64) float64 {
		sum := 0.0
		for _, res := range rs {
			sum += f(res)
		}
		return sum / float64(len(rs))
	}
	each := func(rs []*result) string {
		parts := make([]string, len(rs))
		for i, res := range rs {
			parts[i] = fmt.Sprintf("%.1f", cpu(res))
		}
		return strings.Join(parts, ", ") + " s"
	}
	var out []costLine
	for _, v := range variants {
		base := v.base
		w, wo := with[v], without[base]
		if len(wo) == 0 {
			continue
		}
		ratio := mean(w, cpu) / mean(wo, cpu)
		verdict := "met"
		switch {
		case v.suffix == " + pacing":
			verdict = "pacing, not a gate: no target (its reads of drained pods)"
		case ratio > 1.10:
			verdict = "NOT MET"
		}
		name := base + v.suffix
		if len(w) > 1 {
			name = fmt.Sprintf("%s%s (mean of %d)", base, v.suffix, len(w))
		}
		baseline := fmt.Sprintf("%s without: mean of %d runs (%s) against %s with (%s)", base, len(wo), each(wo), name, each(w))
		cells := []string{
			fmt.Sprintf("%.1f → %.1f (%+.1f)", mean(wo, api), mean(w, api), mean(w, api)-mean(wo, api)),
			fmt.Sprintf("%.2f → %.2f (%+.2f)", mean(wo, ctrlReq), mean(w, ctrlReq), mean(w, ctrlReq)-mean(wo, ctrlReq)),
			fmt.Sprintf("%.1f s → %.1f s (%.2f×)", mean(wo, cpu), mean(w, cpu), ratio),
		}
		out = append(out, costLine{
			text: fmt.Sprintf("%-16s requests per node %s; controller's %s; ndp-controller CPU %s: %s (%s)", name, cells[0], cells[1], cells[2], verdict, baseline),
			md:   fmt.Sprintf("| %s | %s | %s | %s | %s | %s |", name, baseline, cells[0], cells[1], cells[2], verdict),
		})
	}
	return out
}
