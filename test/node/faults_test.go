//go:build faults

// The fault-injection campaign (make faults, docs/reliability.md): many
// trials, each printed as one line with its outcome, and a final count.
// Built only with the faults tag: it takes tens of minutes.

package node

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/daemon"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/planner"
)

func init() {
	faultsBuild = true
	afterTests = append(afterTests, printTally)
}

// The trials' outcomes, by part.
var tally = struct {
	sync.Mutex
	parts          []string
	passed, failed map[string]int
}{passed: map[string]int{}, failed: map[string]int{}}

// trial runs one trial as a subtest and prints its outcome: PASS or FAIL,
// the part, the trial, what was done and what was seen. fn returns what
// it saw; the failures' details are in the test log above the line.
func trial(t *testing.T, part, name string, fn func(t *testing.T) (desc string)) bool {
	t.Helper()
	var desc string
	start := time.Now()
	ok := t.Run(name, func(t *testing.T) { desc = fn(t) })
	tally.Lock()
	defer tally.Unlock()
	if tally.passed[part]+tally.failed[part] == 0 {
		tally.parts = append(tally.parts, part)
	}
	outcome := "PASS"
	if ok {
		tally.passed[part]++
	} else {
		tally.failed[part]++
		outcome = "FAIL"
	}
	fmt.Printf("faults: %s %s %s (%.1fs): %s\n", outcome, part, name, time.Since(start).Seconds(), desc)
	return ok
}

func printTally() int {
	tally.Lock()
	defer tally.Unlock()
	passed, failed := 0, 0
	for _, p := range tally.parts {
		fmt.Printf("faults: %s: %d passed, %d failed\n", p, tally.passed[p], tally.failed[p])
		passed += tally.passed[p]
		failed += tally.failed[p]
	}
	fmt.Printf("faults: %d passed, %d failed\n", passed, failed)
	if failed > 0 || passed == 0 {
		return 1
	}
	return 0
}

// campaignSeed is the seed of the whole run: NDP_FAULTS_SEED=<n> replays
// it.
var campaignSeed = sync.OnceValues(func() (uint64, error) {
	s := uint64(time.Now().UnixNano())
	if v := os.Getenv("NDP_FAULTS_SEED"); v != "" {
		if _, err := fmt.Sscan(v, &s); err != nil {
			return 0, fmt.Errorf("NDP_FAULTS_SEED: %v", err)
		}
	}
	fmt.Printf("faults: seed %d (NDP_FAULTS_SEED=%d replays this run)\n", s, s)
	return s, nil
})

func seed(t *testing.T) uint64 {
	s, err := campaignSeed()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The units a random plan reloads or restarts, each a real systemd unit
// that traces its runs.
var crashUnits = []string{"reloader-a.service", "reloader-b.service", "restarter-a.service", "restarter-b.service"}

// crashActions are the action lists a random plan claims a file change
// with: every kind the daemon runs through systemd, alone and together,
// with and without a drain.
var crashActions = [][]operatorv1.NodeDisruptionPolicySpecAction{
	{{Type: operatorv1.NoneSpecAction}},
	{reload("reloader-a.service")},
	{daemonReload, restart("restarter-a.service")},
	{restart("restarter-b.service"), drainAction},
	{reload("reloader-b.service"), restart("restarter-a.service")},
	{daemonReload, reload("reloader-a.service"), drainAction},
	{restart("restarter-b.service")},
}

const crashSlots = 5 // files /etc/fault/f0..f4

// randomConfig is the next config of a trial: each file of the current one
// kept, changed or removed, new ones added; at least one change. It returns
// the files (path → contents) and the policies for the changed paths.
func randomConfig(rng *rand.Rand, cur map[string]string) (map[string]string, map[string][]operatorv1.NodeDisruptionPolicySpecAction) {
	for {
		next := map[string]string{}
		pols := map[string][]operatorv1.NodeDisruptionPolicySpecAction{}
		for i := 0; i < crashSlots; i++ {
			p := fmt.Sprintf("/etc/fault/f%d", i)
			old, had := cur[p]
			switch r := rng.IntN(4); {
			case had && r == 0: // removed
			case r <= 1 && had: // kept
				next[p] = old
			case !had && r >= 2: // stays absent
			default: // changed or added
				next[p] = randomContents(rng)
			}
			if now, present := next[p]; present != had || now != old {
				pols[p] = crashActions[rng.IntN(len(crashActions))]
			}
		}
		if len(pols) > 0 {
			return next, pols
		}
	}
}

// randomContents is up to 4 KiB of text or binary data.
func randomContents(rng *rand.Rand) string {
	b := make([]byte, rng.IntN(4096)+1)
	binary := rng.IntN(3) == 0
	for i := range b {
		if binary {
			b[i] = byte(rng.IntN(256))
		} else {
			b[i] = "abcdefghijklmnopqrstuvwxyz0123456789 =#\n"[rng.IntN(40)]
		}
	}
	return string(b)
}

// crashPoint is where the daemon kills itself: step index and phase.
type crashPoint struct {
	step  int
	phase string
}

func (c crashPoint) String() string { return fmt.Sprintf("%d:%s", c.step, c.phase) }

// stepNames are the journal's steps for a plan, as the daemon lays them
// out (daemon.newJournal); a trial checks that each crash point it chose
// was reached, so this cannot drift from the daemon unnoticed.
func stepNames(p ndpmcv1.PostConfigActions, osChange bool) []string {
	var s []string
	if p.Drain {
		s = append(s, daemon.StepCordon, daemon.StepDrain)
	}
	s = append(s, daemon.StepBackup, daemon.StepFiles)
	if osChange {
		s = append(s, daemon.StepOS)
	}
	s = append(s, daemon.StepCurrentConfig)
	for _, a := range p.Actions {
		switch a.Type {
		case "None":
		case "Reboot":
			s = append(s, daemon.StepReboot)
		default:
			s = append(s, fmt.Sprintf("%s(%s)", daemon.StepAction, a.String()))
		}
	}
	if p.Drain {
		s = append(s, daemon.StepUncordon)
	}
	return s
}

var phases = []string{"started", "ran", "done"}

// Part 1: 100 trials of SIGKILL at a random step of a random multi-action
// plan (drain, file writes, DaemonReload, Reload, Restart, OS change and
// reboot), some killed twice, each restarted: every node ends on the
// target, every action ran exactly once (from the real units' traces), the
// files are byte-identical to the target's. Four nodes run trials side by
// side; each trial starts from the config the node's previous one left.
func TestFaultsDaemonCrashes(t *testing.T) {
	const workers, trials = 4, 100
	base := seed(t)
	for w := 0; w < workers; w++ {
		t.Run(fmt.Sprintf("node-%d", w), func(t *testing.T) {
			t.Parallel()
			crashWorker(t, w, base, trials/workers)
		})
	}
}

func crashWorker(t *testing.T, w int, base uint64, n int) {
	ctx := context.Background()
	h := newHost(t, fmt.Sprintf("crash-%d", w))
	kubelet(t, h.name)
	for _, u := range crashUnits {
		h.traceUnit(u, "")
	}
	files := map[string]string{"/etc/fault/f0": "zero\n", "/etc/fault/f1": "one\n"}
	cur := builder.MachineConfig(fmt.Sprintf("rendered-crash-%d-000", w)).WithFileMap(files, 0o644).Build()
	cur.Spec.OSImageURL = "quay.io/example/os@sha256:0"
	createMC(t, cur)
	h.provision(cur, files)
	h.stop()
	boot := 1
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("trial-%03d", w*n+i)
		rng := rand.New(rand.NewPCG(base, uint64(w*n+i)))
		next, pols := randomConfig(rng, files)
		to := builder.MachineConfig(fmt.Sprintf("rendered-crash-%d-%03d", w, i)).WithFileMap(next, 0o644).Build()
		to.Spec.OSImageURL = cur.Spec.OSImageURL
		if rng.IntN(5) == 0 { // an OS change: a reboot
			to.Spec.OSImageURL = fmt.Sprintf("quay.io/example/os@sha256:%d", i)
		}
		passed := trial(t, "daemon-crashes", name, func(tt *testing.T) string {
			h.t = tt
			defer func() { h.t = t }()
			p := plan(tt, cur, to, pols)
			to.Labels = map[string]string{ndpmcv1.RenderedForLabel: "worker"}
			if err := k8s.Create(ctx, to); err != nil {
				tt.Fatal(err)
			}
			t.Cleanup(func() { _ = k8s.Delete(context.Background(), to) })
			setPlans(tt, to.Name, p)
			steps := stepNames(p, to.Spec.OSImageURL != cur.Spec.OSImageURL)
			points := []crashPoint{{rng.IntN(len(steps)), phases[rng.IntN(3)]}}
			if rest := len(steps) - points[0].step - 1; rest > 0 && rng.IntN(3) == 0 { // killed twice
				points = append(points, crashPoint{points[0].step + 1 + rng.IntN(rest), phases[rng.IntN(3)]})
			}
			var pod string
			if p.Drain {
				pod = fmt.Sprintf("victim-%d-%d", w, i)
				runningPod(tt, "default", pod, h.name, nil, nil)
			}
			before := unitRuns(h)
			reboots := h.reboots()
			osUpdates := len(osLines(h))

			h.annotate(map[string]string{ndpmcv1.DesiredConfigAnnotation: to.Name})
			crashed := runWithCrashes(tt, h, points, to.Name, &boot)

			// Outcome: on the target, Done, uncordoned; the journal's plan
			// is the stored one; each action ran once; the files are the
			// target's, byte for byte; the drain evicted the pod.
			node := h.node()
			if node.Spec.Unschedulable {
				tt.Error("still cordoned")
			}
			j := h.journal()
			if j == nil || !j.Completed || j.To != to.Name || j.Plan.PlanHash != p.PlanHash {
				tt.Errorf("journal: %+v (want completed, to %s, planHash %s)", j, to.Name, p.PlanHash)
			}
			want := expectedRuns(p)
			after := unitRuns(h)
			for _, u := range crashUnits {
				got := [2]int{after[u][0] - before[u][0], after[u][1] - before[u][1]}
				if got != want[u] {
					tt.Errorf("%s: %d starts, %d reloads during the update, want %d and %d", u, got[0], got[1], want[u][0], want[u][1])
				}
			}
			if got, wantReboots := h.reboots()-reboots, b2i(p.Reboot); got != wantReboots {
				tt.Errorf("%d reboots, want %d", got, wantReboots)
			}
			// The OS change is staged once; a kill between its staging and
			// the journal's record of it (the os step's "ran" point) has the
			// resumed step stage the same change again, which the OSUpdater
			// contract requires to be idempotent.
			wantOS := b2i(to.Spec.OSImageURL != cur.Spec.OSImageURL)
			for _, c := range crashed {
				if c == fmt.Sprintf("%d:ran", slices.Index(steps, daemon.StepOS)) {
					wantOS++
				}
			}
			if got := osLines(h)[osUpdates:]; len(got) != wantOS || len(got) > 1 && slices.ContainsFunc(got, func(l string) bool { return l != got[0] }) {
				tt.Errorf("OS updates: %q, want %d identical", got, wantOS)
			}
			for i := 0; i < crashSlots; i++ {
				p := fmt.Sprintf("/etc/fault/f%d", i)
				data, err := os.ReadFile(h.path(p))
				wantData, present := next[p]
				switch {
				case present && (err != nil || string(data) != wantData):
					tt.Errorf("%s: %d bytes (%v), want the target's %d bytes", p, len(data), err, len(wantData))
				case !present && !os.IsNotExist(err):
					tt.Errorf("%s: dropped by the target, still there (%v)", p, err)
				}
			}
			if pod != "" {
				err := k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: pod}, &corev1.Pod{})
				if !apierrors.IsNotFound(err) {
					tt.Errorf("pod %s was not drained: %v", pod, err)
				}
			}
			if strings.Contains(h.output(), "panic:") {
				tt.Error("ndp-daemon panicked")
			}
			var kills []string
			for _, c := range crashed {
				var i int
				_, _ = fmt.Sscanf(c, "%d:", &i)
				kills = append(kills, fmt.Sprintf("%s (%s)", c, steps[i]))
			}
			return fmt.Sprintf("plan [%s] drain %t, %d files changed; killed at %s of %d steps; %s",
				planner.FormatActions(ndpmcv1.NodeDisruptionPolicyActions(p.Actions)), p.Drain, len(pols), strings.Join(kills, " then "), len(steps), describeRuns(want))
		})
		if !passed {
			// The node is in an unknown state: the next trials would
			// fail for this one's reason.
			t.Logf("node %s stops after the failed %s", h.name, name)
			return
		}
		cur, files = to, next
	}
}

// runWithCrashes runs the daemon with each crash point in turn, restarting
// it after each kill and "rebooting" the node when it asks, until the node
// is Done on the target. It returns the points reached.
func runWithCrashes(t *testing.T, h *host, points []crashPoint, target string, boot *int) []string {
	t.Helper()
	var crashed []string
	env := func() []string {
		if len(points) == 0 {
			return nil
		}
		return []string{"NDP_DAEMON_CRASH_AT=" + points[0].String()}
	}
	h.start(env()...)
	reboots := h.reboots()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		switch {
		case !h.running():
			if len(points) == 0 {
				t.Fatalf("ndp-daemon exited with no crash point set")
			}
			crashed = append(crashed, points[0].String())
			points = points[1:]
			h.start(env()...)
		case h.reboots() > reboots:
			// The node reboots: the daemon dies with it, a new boot ID.
			reboots = h.reboots()
			h.stop()
			*boot++
			h.setBootID(fmt.Sprintf("boot-%d", *boot))
			h.start(env()...)
		default:
			a := h.node().Annotations
			if a[ndpmcv1.CurrentConfigAnnotation] == target && a[ndpmcv1.StateAnnotation] == ndpmcv1.StateDone {
				h.stop()
				if len(points) > 0 {
					t.Errorf("crash point %s was never reached", points[0])
				}
				return crashed
			}
			if a[ndpmcv1.StateAnnotation] == ndpmcv1.StateDegraded {
				t.Fatalf("node degraded: %s", a[ndpmcv1.ReasonAnnotation])
			}
		}
		if time.Now().After(deadline) {
			a := h.node().Annotations
			t.Fatalf("not Done on %s after 3m: state %q current %q reason %q; crashed at %v", target, a[ndpmcv1.StateAnnotation], a[ndpmcv1.CurrentConfigAnnotation], a[ndpmcv1.ReasonAnnotation], crashed)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// unitRuns is each traced unit's [starts, reloads] so far.
func unitRuns(h *host) map[string][2]int {
	out := map[string][2]int{}
	for _, u := range crashUnits {
		s, r := h.runs(u)
		out[u] = [2]int{s, r}
	}
	return out
}

// expectedRuns is what a plan does to each unit: one start per Restart,
// one reload per Reload; nothing when it reboots instead.
func expectedRuns(p ndpmcv1.PostConfigActions) map[string][2]int {
	out := map[string][2]int{}
	for _, u := range crashUnits {
		out[u] = [2]int{}
	}
	if p.Reboot {
		return out
	}
	for _, a := range p.Actions {
		switch {
		case a.Restart != nil:
			r := out[a.Restart.ServiceName]
			r[0]++
			out[a.Restart.ServiceName] = r
		case a.Reload != nil:
			r := out[a.Reload.ServiceName]
			r[1]++
			out[a.Reload.ServiceName] = r
		}
	}
	return out
}

func describeRuns(runs map[string][2]int) string {
	var out []string
	units := make([]string, 0, len(runs))
	for u := range runs {
		units = append(units, u)
	}
	sort.Strings(units)
	for _, u := range units {
		if r := runs[u]; r != [2]int{} {
			out = append(out, fmt.Sprintf("%s %d start(s) %d reload(s)", strings.TrimSuffix(u, ".service"), r[0], r[1]))
		}
	}
	if len(out) == 0 {
		return "no unit touched"
	}
	return "each exactly once: " + strings.Join(out, ", ")
}

// osLines are the OS changes the node's OS updater recorded, each without
// its time.
func osLines(h *host) []string {
	b, _ := os.ReadFile(path.Join(h.dir, "os-updates"))
	return strings.Fields(string(b))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
