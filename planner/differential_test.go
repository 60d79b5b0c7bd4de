package planner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/changeset"
	"github.com/ndp-dev/ndp/planner/oracle"
	"github.com/ndp-dev/ndp/planner/policy"
)

// The differential test: the Rego planner with only the default policy and
// the plain-Go oracle must give the same plan for every generated pair, and
// the change set must be the one the generator's models predict.

// diffOutcome is one implementation's answer, for comparison and printing.
type diffOutcome struct {
	Actions   []policy.Action   `json:"actions"`
	Drain     bool              `json:"drain"`
	Reboot    bool              `json:"reboot"`
	PerChange [][]policy.Action `json:"perChange"`
}

// diffStats counts what the generated pairs exercised.
type diffStats struct {
	n, reboot, drain, none, service int
	verdicts                        map[string]int
}

func (s *diffStats) add(o *diffStats) {
	s.n += o.n
	s.reboot += o.reboot
	s.drain += o.drain
	s.none += o.none
	s.service += o.service
	for k, v := range o.verdicts {
		s.verdicts[k] += v
	}
}

// diffCheck plans one pair both ways and says how they, or the change set
// and the generator's expectation, disagree.
func diffCheck(ctx context.Context, p *planner.Planner, pair genPair, st *diffStats) error {
	from, err := machineconfig.Parse("old", pair.Old)
	if err != nil {
		return fmt.Errorf("generated an invalid old config: %v\n%s", err, pair.Old)
	}
	to, err := machineconfig.Parse("new", pair.New)
	if err != nil {
		return fmt.Errorf("generated an invalid new config: %v\n%s", err, pair.New)
	}
	plan, err := p.Plan(ctx, planner.Request{From: from, To: to, SingleNode: pair.SingleNode})
	if err != nil {
		return fmt.Errorf("rego planner: %v\nold: %s\nnew: %s", err, pair.Old, pair.New)
	}
	cs, err := changeset.Diff(from, to)
	if err != nil {
		return fmt.Errorf("diff: %v", err)
	}
	cs.SingleNode = pair.SingleNode
	csJSON, _ := json.MarshalIndent(cs, "", "  ")
	docs := fmt.Sprintf("old: %s\nnew: %s", pair.Old, pair.New)
	if len(cs.Unreconcilable) > 0 {
		return fmt.Errorf("generated an unreconcilable pair\nchange set: %s\n%s", csJSON, docs)
	}

	ids := make([]string, 0, len(cs.Changes))
	for _, c := range cs.Changes {
		ids = append(ids, c.ID)
	}
	sort.Strings(ids)
	if !slices.Equal(ids, pair.WantChanges) {
		return fmt.Errorf("change set differs from the generator's models\n got: %q\nwant: %q\nchange set: %s\n%s", ids, pair.WantChanges, csJSON, docs)
	}

	var oc diffOutcome
	oc.Actions, oc.Drain, oc.Reboot = oracle.Plan(cs)
	verdict := ""
	for _, d := range oracle.Decide(cs) {
		oc.PerChange = append(oc.PerChange, d.Actions)
		if v, ok := strings.CutPrefix(d.Rule, oracle.RuleRegistries); ok {
			verdict = v
		}
	}
	rc := diffOutcome{Actions: plan.Actions, Drain: plan.Drain, Reboot: plan.Reboot}
	for _, r := range plan.Reasons {
		rc.PerChange = append(rc.PerChange, r.Actions)
	}
	if !reflect.DeepEqual(rc, oc) {
		rj, _ := json.MarshalIndent(rc, "", "  ")
		oj, _ := json.MarshalIndent(oc, "", "  ")
		reasons, _ := json.MarshalIndent(plan.Reasons, "", "  ")
		what := "plans"
		if reflect.DeepEqual(rc.Actions, oc.Actions) && rc.Drain == oc.Drain && rc.Reboot == oc.Reboot {
			what = "actions per change (the merged plans agree)"
		}
		return fmt.Errorf("rego and oracle disagree on %s\nchange set: %s\nrego: %s\noracle: %s\nrego reasons: %s", what, csJSON, rj, oj, reasons)
	}
	if verdict != pair.WantRegistries {
		return fmt.Errorf("registries.conf verdict %q, the generator's models say %q\nchange set: %s\n%s", verdict, pair.WantRegistries, csJSON, docs)
	}

	if st != nil {
		st.n++
		switch {
		case plan.Reboot:
			st.reboot++
		case plan.Actions[0].Type == policy.ActionNone:
			st.none++
		default:
			st.service++
		}
		if plan.Drain {
			st.drain++
		}
		if verdict != "" {
			st.verdicts[verdict]++
		}
	}
	return nil
}

// diffRand is the generator's randomness for one seed.
func diffRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x6e6470)) }

// TestDifferentialDefaults runs seeded random pairs; NDP_DIFF_SEED=<n>
// reruns one of them, NDP_DIFF_PAIRS=<n> runs more.
func TestDifferentialDefaults(t *testing.T) {
	p := sharedPlanner(t)
	ctx := context.Background()
	seeds := make([]uint64, 0, 2500)
	if s := os.Getenv("NDP_DIFF_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("NDP_DIFF_SEED: %v", err)
		}
		seeds = append(seeds, seed)
	} else {
		n := 2500
		if testing.Short() {
			n = 500
		}
		if s := os.Getenv("NDP_DIFF_PAIRS"); s != "" { // for longer soak runs
			var err error
			if n, err = strconv.Atoi(s); err != nil {
				t.Fatalf("NDP_DIFF_PAIRS: %v", err)
			}
		}
		for i := range n {
			seeds = append(seeds, uint64(i))
		}
	}
	// Pairs are independent and the planner is safe for concurrent use:
	// check them on every CPU, then report failures in seed order.
	st := &diffStats{verdicts: map[string]int{}}
	errs := make([]error, len(seeds))
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			local := &diffStats{verdicts: map[string]int{}}
			for i := range next {
				errs[i] = diffCheck(ctx, p, genPairFrom(diffRand(seeds[i])), local)
			}
			mu.Lock()
			st.add(local)
			mu.Unlock()
		})
	}
	for i := range seeds {
		next <- i
	}
	close(next)
	wg.Wait()
	failures := 0
	for i, err := range errs {
		if err == nil {
			continue
		}
		t.Errorf("seed %d (rerun with NDP_DIFF_SEED=%d): %v", seeds[i], seeds[i], err)
		if failures++; failures == 5 {
			t.Fatal("stopping after 5 failures")
		}
	}
	t.Logf("%d pairs: %d reboot, %d service actions only, %d none; %d drain; registries.conf %v",
		st.n, st.reboot, st.service, st.none, st.drain, st.verdicts)
	// Keep the generator honest: every kind of outcome must be common.
	if len(seeds) >= 500 {
		for what, n := range map[string]int{
			"reboot": st.reboot, "service": st.service, "none": st.none, "drain without reboot": st.drain - st.reboot,
			"registries none": st.verdicts[oracle.RegistriesNone], "registries safe": st.verdicts[oracle.RegistriesSafe], "registries unsafe": st.verdicts[oracle.RegistriesUnsafe],
		} {
			if n < len(seeds)/50 {
				t.Errorf("only %d of %d pairs with outcome %q", n, len(seeds), what)
			}
		}
	}
}

func FuzzDifferentialDefaults(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("ndp"))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte("registries.conf: add a digest-only mirror, remove a search registry"))
	for i := range 8 {
		f.Add([]byte{byte(i), byte(i * 37), byte(i * 101), 0, 0, 0, 0, 0, byte(i)})
	}
	p := sharedPlanner(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := diffCheck(context.Background(), p, genPairFrom(rand.New(newGenByteSource(data))), nil); err != nil {
			t.Fatalf("input %x: %v", data, err)
		}
	})
}
