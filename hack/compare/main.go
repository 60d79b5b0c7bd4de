// Command compare measures the disruption ndp avoids. It plans every change
// of the corpus (examples/corpus/corpus.yaml: realistic day-2 changes, each
// an old/new rendered MachineConfig pair) with the planner entry point the
// CLI uses, and prints, per change, ndp's plan next to two anchors with the
// node-minutes of disruption each costs a pool, under a stated per-action
// cost model, and the totals:
//
//   - "MCO today": the Machine Config Operator's own decision (mcorules, its
//     rules at the reference commit, which agree with its code) with its
//     default node disruption policies merged with the MachineConfiguration
//     entries an administrator could safely write for the corpus's changes
//     (examples/corpus/mco-machineconfiguration.yaml), as its operator
//     merges them; nothing of ndp's takes part;
//   - "reboot on any change": the MCO before node disruption policies, every
//     change drains and reboots the node.
//
// and a third column, "MCO with ndp's entries": the MCO's own decision, by
// its code (../shared/mco-ref/mco-decide, run as a process), given the
// MachineConfiguration `ndp export machineconfiguration --from --to
// --machineconfiguration` prints for the change (mcoentries.Export: ndp's
// static and per-update entries over the administrator's entries of "MCO
// today"): what the MCO does once ndp keeps its entries there.
//
// It exits 1 when a plan differs from the one the manifest records, or the
// MCO's decision with ndp's entries from the one mcoentries predicts,
// naming the change, and 2 when the corpus cannot be read or planned.
//
//	go run ./hack/compare [-manifest examples/corpus/corpus.yaml] [-nodes 100]
//	    [-drain 3] [-reboot 7] [-restart 0.5] [-reload 0.1] [-daemon-reload 0] [-chart]
//	    [-mco-decide ../shared/mco-ref/mco-decide]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	operatorv1 "github.com/openshift/api/operator/v1"
	"golang.org/x/sync/errgroup"
	"sigs.k8s.io/yaml"

	"github.com/ndp-dev/ndp/internal/mcoref"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/mco/mcoentries"
	"github.com/ndp-dev/ndp/mco/mcoimport"
	"github.com/ndp-dev/ndp/mco/mcorules"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/loader"
	"github.com/ndp-dev/ndp/planner/policy"
)

// DefaultManifest is the corpus, relative to the repository root.
const DefaultManifest = "examples/corpus/corpus.yaml"

// Manifest is examples/corpus/corpus.yaml.
type Manifest struct {
	// MCO is how the "MCO today" column is planned.
	MCO     MCOAnchor `json:"mco"`
	Changes []Entry   `json:"changes"`
}

// MCOAnchor describes the "MCO today" column.
type MCOAnchor struct {
	// MachineConfiguration is the operator.openshift.io/v1
	// MachineConfiguration whose spec.nodeDisruptionPolicy the MCO merges
	// with its defaults, relative to the manifest.
	MachineConfiguration string `json:"machineConfiguration"`
}

// Entry is one change of the corpus.
type Entry struct {
	// Dir holds old.yaml and new.yaml, relative to the manifest.
	Dir         string `json:"dir"`
	Description string `json:"description"`
	// Policies are loaded beyond the built-in defaults, as `ndp plan
	// --policy` loads them; paths relative to the manifest.
	Policies []string `json:"policies,omitempty"`
	// Expect is ndp's plan with the defaults and Policies.
	Expect Outcome `json:"expect"`
	// ExpectDefaultsOnly is the plan with the defaults alone; required
	// when Policies is not empty, and only then.
	ExpectDefaultsOnly *Outcome `json:"expectDefaultsOnly,omitempty"`
	// ExpectMCO is the "MCO today" plan: the MCO's decision with the
	// MachineConfiguration, never Policies. Required.
	ExpectMCO *Outcome `json:"expectMCO"`
}

// Generated tells whether the change is a KubeletConfig or a
// ContainerRuntimeConfig one (its description starts with the kind), the
// rows the summary also totals apart.
func (e Entry) Generated() bool {
	return strings.HasPrefix(e.Description, "KubeletConfig") || strings.HasPrefix(e.Description, "ContainerRuntimeConfig")
}

// Outcome is what a plan does: its actions as `ndp plan -o text` prints
// them, one per item ("Reload crio.service"), drain and reboot.
type Outcome struct {
	Actions []string `json:"actions"`
	Drain   bool     `json:"drain"`
	Reboot  bool     `json:"reboot"`
}

func (o Outcome) String() string {
	s := strings.Join(o.Actions, ", ")
	if o.Drain && !o.Reboot {
		s += " (drain)"
	}
	return s
}

func (o Outcome) equal(p Outcome) bool {
	return o.String() == p.String() && o.Drain == p.Drain && o.Reboot == p.Reboot
}

func outcomeOf(p *planner.Plan) Outcome { return outcome(p.Actions, p.Drain, p.Reboot) }

func outcome(actions []policy.Action, drain, reboot bool) Outcome {
	o := Outcome{Actions: make([]string, 0, len(actions)), Drain: drain, Reboot: reboot}
	for _, a := range actions {
		o.Actions = append(o.Actions, planner.FormatActions([]policy.Action{a}))
	}
	return o
}

// Costs is the cost model: minutes of disruption per node for each step of
// a plan, and the pool size.
type Costs struct {
	Nodes        int
	Drain        float64 // cordon and drain: the node's workloads are gone for this long, and for the steps after it
	Reboot       float64 // reboot until the node is Ready again
	Restart      float64 // restart of a service
	Reload       float64 // reload of a service
	DaemonReload float64 // systemctl daemon-reload
}

// DefaultCosts are the figures docs/performance.md states.
var DefaultCosts = Costs{Nodes: 100, Drain: 3, Reboot: 7, Restart: 0.5, Reload: 0.1, DaemonReload: 0}

// PerNode is what one node spends on a plan: the sum of its steps; a
// reboot absorbs every other action; None costs nothing.
func (c Costs) PerNode(o Outcome) float64 {
	m := 0.0
	if o.Drain {
		m += c.Drain
	}
	if o.Reboot {
		return m + c.Reboot
	}
	for _, a := range o.Actions {
		switch verb, _, _ := strings.Cut(a, " "); verb {
		case string(policy.ActionRestart):
			m += c.Restart
		case string(policy.ActionReload):
			m += c.Reload
		case string(policy.ActionDaemonReload):
			m += c.DaemonReload
		case string(policy.ActionReboot):
			m += c.Reboot
		}
	}
	return m
}

// RebootOnAny is what every change costs a node under "reboot on any
// change": a drain, then a reboot.
func (c Costs) RebootOnAny() float64 { return c.Drain + c.Reboot }

// Row is one change, planned.
type Row struct {
	Entry Entry
	// Plan is ndp's plan with the defaults and the entry's policies;
	// DefaultsOnly the plan with the defaults alone (nil without policies);
	// MCO the "MCO today" plan.
	Plan, DefaultsOnly, MCO *Outcome
	// Node-minutes for the pool: ndp's plan, the defaults alone (equal to
	// NDP without policies), MCO today, reboot on any change, and what ndp
	// saves against reboot on any change (Saved) and MCO today (SavedVsMCO,
	// negative where ndp costs more).
	NDP, Defaults, MCONodeMin, RebootOnAny, Saved, SavedVsMCO float64
	// WithEntries is the "MCO with ndp's entries" column.
	WithEntries EntriesColumn
}

// EntriesColumn is the MCO's decision (mco-decide) with the
// MachineConfiguration ndp would write for the change.
type EntriesColumn struct {
	// Plan is mco-decide's decision as an Outcome; SameAsNDP: its action
	// set, drain and reboot are ndp's plan's.
	Plan      *Outcome
	SameAsNDP bool
	// Static and PerUpdate are ndp's entries ("file:/etc/chrony.conf").
	Static, PerUpdate []string
	// Node-minutes: with ndp's entries, what that saves against MCO today,
	// and what it costs beyond ndp's own plan (0 where the MCO does it).
	NodeMin, SavedVsMCO, OverNDP float64
}

// Report is the whole corpus, planned.
type Report struct {
	Manifest string
	Costs    Costs
	Rows     []Row
	// MCODecide is the MCO's reference tool the entries column ran.
	MCODecide string
	// All are the totals over every row.
	All Totals
	// Generated are the totals over the KubeletConfig and
	// ContainerRuntimeConfig rows only.
	Generated Totals
	// Drift names every plan that differs from the manifest.
	Drift []string
}

// Totals are node-minutes summed over some rows.
type Totals struct {
	Rows                                                      int
	NDP, Defaults, MCONodeMin, RebootOnAny, Saved, SavedVsMCO float64
	Entries                                                   EntriesTotals
}

// EntriesTotals sum the "MCO with ndp's entries" column; SameAsNDP counts
// the rows where the MCO then does ndp's plan.
type EntriesTotals struct {
	NodeMin, SavedVsMCO, OverNDP float64
	SameAsNDP                    int
}

func (t *EntriesTotals) add(c EntriesColumn) {
	t.NodeMin += c.NodeMin
	t.SavedVsMCO += c.SavedVsMCO
	t.OverNDP += c.OverNDP
	if c.SameAsNDP {
		t.SameAsNDP++
	}
}

func (t *Totals) add(row Row) {
	t.Rows++
	t.NDP += row.NDP
	t.Defaults += row.Defaults
	t.MCONodeMin += row.MCONodeMin
	t.RebootOnAny += row.RebootOnAny
	t.Saved += row.Saved
	t.SavedVsMCO += row.SavedVsMCO
	t.Entries.add(row.WithEntries)
}

// LoadManifest reads and checks the manifest: every entry names a
// directory once, has an expectation, and an expectation with the
// defaults alone exactly when it lists policies.
func LoadManifest(path string) (*Manifest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(m.Changes) == 0 {
		return nil, fmt.Errorf("%s: no changes", path)
	}
	if m.MCO.MachineConfiguration == "" {
		return nil, fmt.Errorf("%s: mco.machineConfiguration is empty (the MachineConfiguration of the \"MCO today\" column)", path)
	}
	seen := map[string]bool{}
	for i, e := range m.Changes {
		where := fmt.Sprintf("%s: changes[%d]", path, i)
		switch {
		case e.Dir == "" || strings.ContainsAny(e.Dir, `/\`):
			return nil, fmt.Errorf("%s: dir %q: expected a directory name beside the manifest", where, e.Dir)
		case seen[e.Dir]:
			return nil, fmt.Errorf("%s: dir %s listed twice", where, e.Dir)
		case e.Description == "":
			return nil, fmt.Errorf("%s (%s): description is empty", where, e.Dir)
		case len(e.Expect.Actions) == 0:
			return nil, fmt.Errorf("%s (%s): expect.actions is empty", where, e.Dir)
		case len(e.Policies) > 0 && e.ExpectDefaultsOnly == nil:
			return nil, fmt.Errorf("%s (%s): lists policies but no expectDefaultsOnly", where, e.Dir)
		case len(e.Policies) == 0 && e.ExpectDefaultsOnly != nil:
			return nil, fmt.Errorf("%s (%s): expectDefaultsOnly without policies", where, e.Dir)
		case e.ExpectMCO == nil || len(e.ExpectMCO.Actions) == 0:
			return nil, fmt.Errorf("%s (%s): expectMCO (the \"MCO today\" plan) is missing or has no actions", where, e.Dir)
		}
		seen[e.Dir] = true
	}
	return &m, nil
}

// Run plans every change of the manifest at path with the costs given,
// and has the MCO's reference tool at mcoDecide decide it with ndp's
// entries. Drift is reported in the result, not as an error.
func Run(ctx context.Context, path string, costs Costs, mcoDecide string) (*Report, error) {
	m, err := LoadManifest(path)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(mcoDecide); mcoDecide == "" || err != nil || st.IsDir() {
		return nil, fmt.Errorf("mco-decide not found (%q): the \"MCO with ndp's entries\" column runs the MCO's own code, ../shared/mco-ref/mco-decide; give it with -mco-decide, $NDP_MCO_DECIDE or $NDP_MCO_REF", mcoDecide)
	}
	base := filepath.Dir(path)
	type compiled struct {
		pl   *planner.Planner
		pols []policy.Policy
	}
	planners := map[string]compiled{} // by policy paths
	compile := func(policies []string) (compiled, error) {
		key := strings.Join(policies, "\x00")
		c, ok := planners[key]
		if !ok {
			paths := make([]string, len(policies))
			for i, pp := range policies {
				paths[i] = filepath.Join(base, pp)
			}
			pols, err := loadPolicies(paths)
			if err != nil {
				return c, err
			}
			pl, err := planner.New(ctx, pols, engine.Options{})
			if err != nil {
				return c, err
			}
			c = compiled{pl: pl, pols: pols}
			planners[key] = c
		}
		return c, nil
	}
	planWith := func(policies []string, req planner.Request) (*planner.Plan, error) {
		c, err := compile(policies)
		if err != nil {
			return nil, err
		}
		return c.pl.Plan(ctx, req)
	}
	admin, err := readMachineConfiguration(filepath.Join(base, m.MCO.MachineConfiguration))
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "ndp-compare-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	r := &Report{Manifest: path, Costs: costs, MCODecide: mcoDecide}
	var exports []*mcoentries.ExportResult // by row
	pool := float64(costs.Nodes)
	for _, e := range m.Changes {
		dir := filepath.Join(base, e.Dir)
		from, err := readConfig(filepath.Join(dir, "old.yaml"))
		if err != nil {
			return nil, err
		}
		to, err := readConfig(filepath.Join(dir, "new.yaml"))
		if err != nil {
			return nil, err
		}
		req := planner.Request{From: from, To: to}
		plan, err := planWith(e.Policies, req)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Dir, err)
		}
		if len(plan.Unreconcilable) > 0 {
			return nil, fmt.Errorf("%s: unreconcilable: %v", e.Dir, plan.Unreconcilable)
		}
		got := outcomeOf(plan)
		row := Row{Entry: e, Plan: &got, RebootOnAny: pool * costs.RebootOnAny()}
		row.NDP = pool * costs.PerNode(got)
		row.Defaults = row.NDP
		row.Saved = row.RebootOnAny - row.NDP
		if !got.equal(e.Expect) {
			r.Drift = append(r.Drift, fmt.Sprintf("%s: ndp plans %s, the manifest expects %s", e.Dir, describe(got), describe(e.Expect)))
		}
		if len(e.Policies) > 0 {
			def, err := planWith(nil, req)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", e.Dir, err)
			}
			d := outcomeOf(def)
			row.DefaultsOnly = &d
			row.Defaults = pool * costs.PerNode(d)
			if !d.equal(*e.ExpectDefaultsOnly) {
				r.Drift = append(r.Drift, fmt.Sprintf("%s: with the defaults alone ndp plans %s, the manifest expects %s", e.Dir, describe(d), describe(*e.ExpectDefaultsOnly)))
			}
		}
		mo, err := mcoToday(from, to, admin)
		if err != nil {
			return nil, fmt.Errorf("%s: MCO today: %w", e.Dir, err)
		}
		row.MCO = &mo
		row.MCONodeMin = pool * costs.PerNode(mo)
		row.SavedVsMCO = row.MCONodeMin - row.NDP
		if !mo.equal(*e.ExpectMCO) {
			r.Drift = append(r.Drift, fmt.Sprintf("%s: MCO today plans %s, the manifest expects %s", e.Dir, describe(mo), describe(*e.ExpectMCO)))
		}

		c, err := compile(e.Policies)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Dir, err)
		}
		ex, err := mcoentries.Export(ctx, mcoentries.ExportInput{Planner: c.pl, Policies: c.pols, Admin: admin,
			Update: &mcoentries.Update{From: from, To: to, Plan: plan}})
		if err != nil {
			return nil, fmt.Errorf("%s: ndp's entries: %w", e.Dir, err)
		}
		exports = append(exports, ex)
		r.Rows = append(r.Rows, row)
	}

	// The MCO's decisions, a process each, some at once.
	decisions := make([]*mcorules.Decision, len(r.Rows))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(2 * runtime.NumCPU())
	for i, row := range r.Rows {
		dir := filepath.Join(base, row.Entry.Dir)
		g.Go(func() error {
			d, err := decideWith(gctx, mcoDecide, exports[i], filepath.Join(dir, "old.yaml"), filepath.Join(dir, "new.yaml"), filepath.Join(tmp, row.Entry.Dir+".json"))
			if err != nil {
				return fmt.Errorf("%s: MCO with ndp's entries: %w", row.Entry.Dir, err)
			}
			decisions[i] = d
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for i := range r.Rows {
		row, ex, d := &r.Rows[i], exports[i], decisions[i]
		if does := mcoentries.DecisionEffect(d); does != ex.Update.After {
			r.Drift = append(r.Drift, fmt.Sprintf("%s: with ndp's entries the MCO (mco-decide) does %s, mcoentries predicts %s", row.Entry.Dir, does, ex.Update.After))
		}
		wo := decisionOutcome(d)
		row.WithEntries = EntriesColumn{Plan: &wo, SameAsNDP: sameSet(wo, *row.Plan),
			Static: mcoentries.Subjects(ex.StaticEntries), PerUpdate: mcoentries.Subjects(ex.Update.Entries),
			NodeMin: pool * costs.PerNode(wo)}
		row.WithEntries.SavedVsMCO = row.MCONodeMin - row.WithEntries.NodeMin
		row.WithEntries.OverNDP = row.WithEntries.NodeMin - row.NDP

		r.All.add(*row)
		if row.Entry.Generated() {
			r.Generated.add(*row)
		}
	}
	return r, nil
}

// readMachineConfiguration reads the administrator's MachineConfiguration
// of the "MCO today" column, as `ndp plan --mco --machineconfiguration`
// does: strictly, and refused where the MCO's API would refuse it. A
// warning is an error: the file should say exactly what it means.
func readMachineConfiguration(path string) (*operatorv1.MachineConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	src, warnings, err := mcoimport.Read(path, data)
	if err != nil {
		return nil, err
	}
	if len(warnings) > 0 {
		return nil, fmt.Errorf("%s: %s", path, strings.Join(warnings, "; "))
	}
	if err := mcorules.Validate(src.Object.Spec.NodeDisruptionPolicy); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return src.Object, nil
}

// mcoToday is the "MCO today" plan of a change: the MCO's decision
// (mcorules) with the administrator's MachineConfiguration.
func mcoToday(from, to *machineconfig.Config, admin *operatorv1.MachineConfiguration) (Outcome, error) {
	in, _ := mcorules.For(from, to, admin, false)
	d, err := mcorules.Decide(in)
	if err != nil {
		return Outcome{}, err
	}
	if err := costable(d); err != nil {
		return Outcome{}, err
	}
	return decisionOutcome(d), nil
}

// costable: a row can cost a decision the MCO applies. The corpus's
// changes are ones ndp plans, so a refused or failed update is an error.
func costable(d *mcorules.Decision) error {
	switch {
	case len(d.Refused) > 0:
		return fmt.Errorf("the MCO refuses the update: %s", d.Refused[0])
	case d.Error != "":
		return fmt.Errorf("the MCO's daemon fails the update: %s", d.Error)
	}
	return nil
}

// decideWith writes the export to file and runs mco-decide on the pair
// with it.
func decideWith(ctx context.Context, tool string, ex *mcoentries.ExportResult, from, to, file string) (*mcorules.Decision, error) {
	obj, err := ex.Object()
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(file, data, 0o600); err != nil {
		return nil, err
	}
	return mcoDecides(ctx, tool, from, to, file)
}

// mcoDecides runs mco-decide on the pair with the MachineConfiguration in
// file: the MCO's own code decides, not mcorules.
func mcoDecides(ctx context.Context, tool, from, to, file string) (*mcorules.Decision, error) {
	var stderr strings.Builder
	cmd := exec.CommandContext(ctx, tool, "--from", from, "--to", to, "--machineconfiguration", file)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %s", tool, err, strings.TrimSpace(stderr.String()))
	}
	var res struct {
		Reconcilable bool              `json:"reconcilable"`
		Error        string            `json:"error"`
		Actions      []mcorules.Action `json:"actions"`
		Drain        bool              `json:"drain"`
		Reboot       bool              `json:"reboot"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	d := &mcorules.Decision{Actions: res.Actions, Drain: res.Drain, Reboot: res.Reboot, Error: res.Error}
	if !res.Reconcilable {
		d.Refused = []string{"not reconcilable (mco-decide)"}
	}
	return d, costable(d)
}

// decisionOutcome is the MCO's decision as an Outcome in the terms of
// ndp's plans (mcoimport.DecisionPlan).
func decisionOutcome(d *mcorules.Decision) Outcome {
	return outcome(mcoimport.DecisionPlan(d))
}

// sameSet: the same action set, drain and reboot (the MCO orders
// different files' actions at random).
func sameSet(a, b Outcome) bool {
	set := func(o Outcome) []string {
		s := slices.DeleteFunc(slices.Clone(o.Actions), func(x string) bool { return x == "None" || x == "Drain" })
		slices.Sort(s)
		return slices.Compact(s)
	}
	return slices.Equal(set(a), set(b)) && a.Drain == b.Drain && a.Reboot == b.Reboot
}

func describe(o Outcome) string {
	return fmt.Sprintf("[%s] drain=%t reboot=%t", strings.Join(o.Actions, ", "), o.Drain, o.Reboot)
}

func readConfig(path string) (*machineconfig.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return machineconfig.Parse(path, data)
}

// loadPolicies is what `ndp plan --policy` loads: the policies at paths,
// after the built-in default policy unless one of them replaces it.
func loadPolicies(paths []string) ([]policy.Policy, error) {
	pols, _, err := loader.Load(paths...)
	if err != nil {
		return nil, err
	}
	return policy.WithDefaultPolicy(pols), nil
}

// num prints minutes and node-minutes to two decimals at most, without
// trailing zeros.
func num(f float64) string { return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64) }

// WriteTable prints the cost model, the table, the totals and the summary.
func WriteTable(w io.Writer, r *Report) error {
	c := r.Costs
	var b strings.Builder
	fmt.Fprintf(&b, "Disruption avoided: %d changes of %s, a pool of %d nodes\n", len(r.Rows), r.Manifest, c.Nodes)
	fmt.Fprintf(&b, "Cost model, minutes per node: drain %s, reboot %s, restart %s, reload %s, daemon-reload %s, none 0.\n",
		num(c.Drain), num(c.Reboot), num(c.Restart), num(c.Reload), num(c.DaemonReload))
	b.WriteString("A plan costs the sum of its steps (a reboot plan: drain + reboot); node-minutes = minutes per node x nodes.\n")
	b.WriteString("MCO today: the MCO's own decision (mcorules: its rules at the reference commit) with its default node disruption\n" +
		"policies and the MachineConfiguration entries an administrator can safely write (mco-machineconfiguration.yaml).\n")
	fmt.Fprintf(&b, "Reboot on any change (the MCO before node disruption policies): drain + reboot = %s min per node, %s node-minutes per change.\n\n",
		num(c.RebootOnAny()), num(float64(c.Nodes)*c.RebootOnAny()))

	header := []string{"#", "change", "policies", "ndp plan", "drain", "ndp node-min", "MCO today plan", "MCO today node-min", "reboot-on-any node-min", "saved vs MCO today", "saved vs reboot-on-any"}
	rows := [][]string{}
	for i, row := range r.Rows {
		policies := "defaults"
		if len(row.Entry.Policies) > 0 {
			names := make([]string, len(row.Entry.Policies))
			for j, p := range row.Entry.Policies {
				names[j] = "+" + strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))
			}
			policies = strings.Join(names, " ")
		}
		rows = append(rows, []string{strconv.Itoa(i + 1), row.Entry.Dir, policies, strings.Join(row.Plan.Actions, ", "),
			yesNo(row.Plan.Drain), num(row.NDP), row.MCO.String(), num(row.MCONodeMin), num(row.RebootOnAny), num(row.SavedVsMCO), num(row.Saved)})
	}
	rows = append(rows, []string{"", "total", "", fmt.Sprintf("%d of %d changes without a reboot", noReboot(r, func(row Row) *Outcome { return row.Plan }), len(r.Rows)),
		fmt.Sprintf("%d", drained(r)), num(r.All.NDP), fmt.Sprintf("%d of %d without a reboot", noReboot(r, func(row Row) *Outcome { return row.MCO }), len(r.Rows)),
		num(r.All.MCONodeMin), num(r.All.RebootOnAny), fmt.Sprintf("%s (%s)", num(r.All.SavedVsMCO), pct(r.All.SavedVsMCO, r.All.MCONodeMin)), fmt.Sprintf("%s (%s)", num(r.All.Saved), pct(r.All.Saved, r.All.RebootOnAny))})
	writeAligned(&b, header, rows, map[int]bool{0: true, 5: true, 7: true, 8: true, 9: true, 10: true})

	writeEntriesSection(&b, r)

	fmt.Fprintf(&b, "\nSummary, node-minutes for a pool of %d nodes (saved: what ndp saves against each anchor):\n\n", c.Nodes)

	var sum [][]string
	for _, t := range []struct {
		name string
		t    Totals
	}{{"all changes", r.All}, {"KubeletConfig and ContainerRuntimeConfig", r.Generated}} {
		if t.t.Rows == 0 {
			continue
		}
		sum = append(sum, []string{t.name, strconv.Itoa(t.t.Rows), num(t.t.NDP), num(t.t.MCONodeMin), num(t.t.RebootOnAny),
			fmt.Sprintf("%s (%s)", num(t.t.SavedVsMCO), pct(t.t.SavedVsMCO, t.t.MCONodeMin)),
			fmt.Sprintf("%s (%s)", num(t.t.Saved), pct(t.t.Saved, t.t.RebootOnAny))})
	}
	writeAligned(&b, []string{"changes", "n", "ndp", "MCO today", "reboot on any change", "saved vs MCO today", "saved vs reboot on any change"}, sum,
		map[int]bool{1: true, 2: true, 3: true, 4: true, 5: true, 6: true})

	if withPolicies := policyRows(r); len(withPolicies) > 0 {
		fmt.Fprintf(&b, "\nWith the built-in defaults alone, the %d changes planned with a policy above become:\n", len(withPolicies))
		for _, row := range withPolicies {
			fmt.Fprintf(&b, "  %s: %s, %s node-minutes\n", row.Entry.Dir, row.DefaultsOnly, num(row.Defaults))
		}
		fmt.Fprintf(&b, "Total with the defaults alone: %s node-minutes, %s saved against reboot on any change (%s), %s against MCO today (%s).\n",
			num(r.All.Defaults), num(r.All.RebootOnAny-r.All.Defaults), pct(r.All.RebootOnAny-r.All.Defaults, r.All.RebootOnAny),
			num(r.All.MCONodeMin-r.All.Defaults), pct(r.All.MCONodeMin-r.All.Defaults, r.All.MCONodeMin))
	}
	if len(r.Drift) > 0 {
		fmt.Fprintf(&b, "\nDRIFT: %d plan(s) differ from %s:\n", len(r.Drift), r.Manifest)
		for _, d := range r.Drift {
			b.WriteString("  " + d + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeEntriesSection prints the "MCO with ndp's entries" column, per
// change and summed, in the table's style. It stands between the table and
// the summary, which docs/performance.md shows as they are.
func writeEntriesSection(b *strings.Builder, r *Report) {
	b.WriteString("\nMCO with ndp's entries: the MCO's own decision (mco-decide, its daemon's code) given the MachineConfiguration\n" +
		"`ndp export machineconfiguration --from OLD --to NEW` prints for the change: ndp's static and per-update entries\n" +
		"over the administrator's of MCO today (mco-machineconfiguration.yaml).\n\n")
	header := []string{"#", "change", "ndp's entries", "MCO with ndp's entries plan", "node-min", "as ndp plans", "saved vs MCO today", "over ndp"}
	var rows [][]string
	for i, row := range r.Rows {
		w := row.WithEntries
		rows = append(rows, []string{strconv.Itoa(i + 1), row.Entry.Dir, entriesText(w), w.Plan.String(), num(w.NodeMin), yesNo(w.SameAsNDP), num(w.SavedVsMCO), num(w.OverNDP)})
	}
	t := r.All.Entries
	rows = append(rows, []string{"", "total", "", fmt.Sprintf("%d of %d as ndp plans", t.SameAsNDP, len(r.Rows)), num(t.NodeMin), "",
		fmt.Sprintf("%s (%s)", num(t.SavedVsMCO), pct(t.SavedVsMCO, r.All.MCONodeMin)), num(t.OverNDP)})
	writeAligned(b, header, rows, map[int]bool{0: true, 4: true, 6: true, 7: true})

	fmt.Fprintf(b, "\nNode-minutes with ndp's entries, a pool of %d nodes (saved: against MCO today; over ndp: beyond ndp's own plans):\n\n", r.Costs.Nodes)

	var sum [][]string
	for _, t := range []struct {
		name string
		t    Totals
	}{{"all changes", r.All}, {"KubeletConfig and ContainerRuntimeConfig", r.Generated}} {
		if t.t.Rows == 0 {
			continue
		}
		sum = append(sum, []string{t.name, strconv.Itoa(t.t.Rows), num(t.t.NDP), num(t.t.MCONodeMin), num(t.t.Entries.NodeMin),
			fmt.Sprintf("%d of %d", t.t.Entries.SameAsNDP, t.t.Rows),
			fmt.Sprintf("%s (%s)", num(t.t.Entries.SavedVsMCO), pct(t.t.Entries.SavedVsMCO, t.t.MCONodeMin)),
			fmt.Sprintf("%s (%s)", num(t.t.Entries.OverNDP), pct(t.t.Entries.OverNDP, t.t.NDP))})
	}
	writeAligned(b, []string{"changes", "n", "ndp", "MCO today", "MCO with ndp's entries", "as ndp plans", "saved vs MCO today", "over ndp"}, sum,
		map[int]bool{1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 7: true})
}

// entriesText names ndp's entries of a row, static then per update.
func entriesText(w EntriesColumn) string {
	var parts []string
	if len(w.Static) > 0 {
		parts = append(parts, "static: "+strings.Join(trimSubjects(w.Static), ", "))
	}
	if len(w.PerUpdate) > 0 {
		parts = append(parts, "per update: "+strings.Join(trimSubjects(w.PerUpdate), ", "))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// trimSubjects drops the "file:" of file subjects: paths speak for
// themselves.
func trimSubjects(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.TrimPrefix(s, "file:")
	}
	return out
}

// pct is part as a percentage of whole, one decimal.
func pct(part, whole float64) string {
	if whole == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*part/whole)
}

func policyRows(r *Report) []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.DefaultsOnly != nil {
			out = append(out, row)
		}
	}
	return out
}

func noReboot(r *Report, plan func(Row) *Outcome) int {
	n := 0
	for _, row := range r.Rows {
		if !plan(row).Reboot {
			n++
		}
	}
	return n
}

func drained(r *Report) int {
	n := 0
	for _, row := range r.Rows {
		if row.Plan.Drain {
			n++
		}
	}
	return n
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// writeAligned writes a Markdown table with padded columns: readable in a
// terminal, rendered as a table on GitHub. Number columns align right.
func writeAligned(b *strings.Builder, header []string, rows [][]string, rightCols map[int]bool) {
	width := make([]int, len(header))
	for i, h := range header {
		width[i] = len(h)
	}
	for _, r := range rows {
		for i, cell := range r {
			width[i] = max(width[i], len([]rune(cell)))
		}
	}
	right := func(i int) bool { return rightCols[i] }
	line := func(cells []string) {
		b.WriteString("|")
		for i, cell := range cells {
			pad := strings.Repeat(" ", width[i]-len([]rune(cell)))
			if right(i) {
				b.WriteString(" " + pad + cell + " |")
			} else {
				b.WriteString(" " + cell + pad + " |")
			}
		}
		b.WriteString("\n")
	}
	line(header)
	b.WriteString("|")
	for i := range header {
		if right(i) {
			b.WriteString(" " + strings.Repeat("-", width[i]-1) + ": |")
		} else {
			b.WriteString(" " + strings.Repeat("-", width[i]) + " |")
		}
	}
	b.WriteString("\n")
	for _, r := range rows {
		line(r)
	}
}

// WriteChart prints a Mermaid xychart-beta: per change, reboot on any change
// and MCO today as lines and ndp's node-minutes as bars.
func WriteChart(w io.Writer, r *Report) error {
	var b strings.Builder
	labels := make([]string, len(r.Rows))
	ndp := make([]string, len(r.Rows))
	baseline := make([]string, len(r.Rows))
	mco := make([]string, len(r.Rows))
	top := 0.0
	for i, row := range r.Rows {
		labels[i] = fmt.Sprintf("%q", fmt.Sprintf("%02d", i+1))
		ndp[i] = num(row.NDP)
		baseline[i] = num(row.RebootOnAny)
		mco[i] = num(row.MCONodeMin)
		top = max(top, row.RebootOnAny, row.NDP, row.MCONodeMin)
	}
	b.WriteString("```mermaid\n")
	b.WriteString("xychart-beta\n")
	fmt.Fprintf(&b, "    title \"Node-minutes per change, %d-node pool: ndp (bars) vs reboot on any change (top line) and MCO today (lower line)\"\n", r.Costs.Nodes)
	fmt.Fprintf(&b, "    x-axis \"change #\" [%s]\n", strings.Join(labels, ", "))
	fmt.Fprintf(&b, "    y-axis \"node-minutes\" 0 --> %s\n", num(top*1.1))
	fmt.Fprintf(&b, "    bar [%s]\n", strings.Join(ndp, ", "))
	fmt.Fprintf(&b, "    line [%s]\n", strings.Join(baseline, ", "))
	fmt.Fprintf(&b, "    line [%s]\n", strings.Join(mco, ", "))
	b.WriteString("```\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// DefaultMCODecide is where the MCO's reference tool is: $NDP_MCO_DECIDE,
// else mco-decide in $NDP_MCO_REF, else in shared/mco-ref beside the
// repository (the nearest directory up with go.mod), as the tests find it
// (internal/mcoref); "" when there is none.
func DefaultMCODecide() string {
	if p := os.Getenv("NDP_MCO_DECIDE"); p != "" {
		return p
	}
	dir := mcoref.Dir()
	if dir == "" {
		return ""
	}
	p := filepath.Join(dir, "mco-decide")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is the command: its exit code is 0 when every plan is the one the
// manifest records, 1 on drift, 2 on a usage error or a corpus that cannot
// be read or planned.
func run(args []string, stdout, stderr io.Writer) int {
	costs := DefaultCosts
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	manifest := fs.String("manifest", DefaultManifest, "the corpus manifest")
	fs.IntVar(&costs.Nodes, "nodes", costs.Nodes, "nodes in the pool")
	fs.Float64Var(&costs.Drain, "drain", costs.Drain, "minutes a drain costs a node")
	fs.Float64Var(&costs.Reboot, "reboot", costs.Reboot, "minutes a reboot costs a node (until it is Ready again)")
	fs.Float64Var(&costs.Restart, "restart", costs.Restart, "minutes a service restart costs a node")
	fs.Float64Var(&costs.Reload, "reload", costs.Reload, "minutes a service reload costs a node")
	fs.Float64Var(&costs.DaemonReload, "daemon-reload", costs.DaemonReload, "minutes a systemd daemon-reload costs a node")
	chart := fs.Bool("chart", false, "also print the Mermaid chart of docs/performance.md")
	mcoDecide := fs.String("mco-decide", DefaultMCODecide(), "the MCO's reference tool mco-decide, for the \"MCO with ndp's entries\" column")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "compare: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if costs.Nodes < 1 || costs.Drain < 0 || costs.Reboot < 0 || costs.Restart < 0 || costs.Reload < 0 || costs.DaemonReload < 0 {
		fmt.Fprintln(stderr, "compare: -nodes must be at least 1 and no cost may be negative")
		return 2
	}
	r, err := Run(context.Background(), *manifest, costs, *mcoDecide)
	if err != nil {
		fmt.Fprintf(stderr, "compare: %v\n", err)
		return 2
	}
	if err := WriteTable(stdout, r); err != nil {
		fmt.Fprintf(stderr, "compare: %v\n", err)
		return 2
	}
	if *chart {
		fmt.Fprintln(stdout)
		if err := WriteChart(stdout, r); err != nil {
			fmt.Fprintf(stderr, "compare: %v\n", err)
			return 2
		}
	}
	if len(r.Drift) > 0 {
		for _, d := range r.Drift {
			fmt.Fprintf(stderr, "compare: drift: %s\n", d)
		}
		return 1
	}
	return 0
}
