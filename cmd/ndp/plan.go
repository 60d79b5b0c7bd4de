package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/spf13/cobra"

	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/mco/mcoimport"
	"github.com/ndp-dev/ndp/mco/mcorules"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/changeset"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/loader"
	"github.com/ndp-dev/ndp/planner/policy"
)

// updateOptions are the update a command plans: the configs nodes move
// from and to (--from, --to) and what the policies read of the pool.
type updateOptions struct {
	from, to   string
	singleNode bool
	pool       string
	poolLabels map[string]string
}

// request reads the two configs into the planner's request for the
// update; the pool's labels only when --pool-labels was given.
func (o *updateOptions) request(cmd *cobra.Command) (planner.Request, error) {
	from, err := readMachineConfig(o.from)
	if err != nil {
		return planner.Request{}, err
	}
	to, err := readMachineConfig(o.to)
	if err != nil {
		return planner.Request{}, err
	}
	req := planner.Request{From: from, To: to, Pool: o.pool, SingleNode: o.singleNode}
	if cmd.Flags().Changed("pool-labels") {
		req.PoolLabels = o.poolLabels
	}
	return req, nil
}

type planOptions struct {
	updateOptions
	policies   []string
	noDefaults bool
	output     string
	// comparePolicies: plan again with these policies added (--compare-policy).
	comparePolicies []string
	// mco: print what the Machine Config Operator does instead (--mco),
	// under the policies of machineConfiguration (a file) or its defaults.
	mco                  bool
	machineConfiguration string
}

func (o *planOptions) addFlags(cmd *cobra.Command, defaultOutput string) {
	f := cmd.Flags()
	f.StringVar(&o.from, "from", "", "the MachineConfig nodes run now (YAML or JSON file)")
	f.StringVar(&o.to, "to", "", "the MachineConfig nodes move to (YAML or JSON file)")
	f.StringArrayVar(&o.policies, "policy", nil, "NodeDisruptionPolicy YAML, .rego file, directory of them, or OPA bundle .tar.gz (repeatable)")
	f.BoolVar(&o.noDefaults, "no-defaults", false, "do not load the built-in default policy")
	f.BoolVar(&o.singleNode, "single-node", false, "plan for a single-node cluster: never drain")
	f.StringVar(&o.pool, "pool", "", "MachineConfigPool name passed to policies as input.pool")
	f.StringToStringVar(&o.poolLabels, "pool-labels", nil, "the pool's labels (k=v,...): policies with a poolSelector apply only when it matches them")
	f.StringVarP(&o.output, "output", "o", defaultOutput, "output format: text, json or yaml")
	f.StringArrayVar(&o.comparePolicies, "compare-policy", nil, "plan again with the policies at PATH added (a policy of the same name replaced) and print how the plan would change (repeatable)")
	f.BoolVar(&o.mco, "mco", false, "print what the Machine Config Operator's daemon does instead: its actions, drain, reboot or refusal, and the rule that decided each change")
	f.StringVar(&o.machineConfiguration, "machineconfiguration", "", "with --mco: `FILE`, the cluster's MachineConfiguration (operator.openshift.io/v1, as oc get machineconfiguration cluster -o yaml prints it); default: the MCO's default policies")
	_ = cmd.MarkFlagRequired("from")
	_ = cmd.MarkFlagRequired("to")
}

func newPlanCommand() *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:   "plan --from OLD.yaml --to NEW.yaml [--policy PATH]... [--compare-policy PATH]... [-o text|json|yaml]",
		Short: "Compute the plan a node follows to move from one rendered MachineConfig to another",
		Long: `Compute the plan a node follows to move from one rendered MachineConfig to another.

With --compare-policy, the plan is computed twice, with the policies as given and again with the
policies at PATH added (each in place of a policy of the same name), and the output says how the
plan would change ("Reboot → Restart chronyd.service (no drain)") or that it would not.

With --mco, the plan is the Machine Config Operator's instead: what its node daemon does for this
update under the cluster's node disruption policies (--machineconfiguration FILE, else the MCO's
defaults), with the MCO rule that decided each change; a refused update exits 3.

Exit codes: 0 plan computed; 3 unreconcilable (the plan is printed with "unreconcilable" filled);
1 invalid input or policy; 2 usage.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	o.addFlags(cmd, "json")
	return cmd
}

func newExplainCommand() *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:   "explain --from OLD.yaml --to NEW.yaml [--policy PATH]...",
		Short: "Explain a plan: each change, the policy that claimed it and its actions (ndp plan -o text)",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	o.addFlags(cmd, "text")
	return cmd
}

func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q: give configs with --from and --to", args)}
	}
	return nil
}

func (o *planOptions) run(cmd *cobra.Command) error {
	switch o.output {
	case "text", "json", "yaml":
	default:
		return usageError{fmt.Errorf("--output must be text, json or yaml, not %q", o.output)}
	}
	if err := o.checkMCOFlags(cmd); err != nil {
		return err
	}
	req, err := o.request(cmd)
	if err != nil {
		return err
	}
	if o.mco {
		return o.runMCO(cmd, req.From, req.To)
	}
	pols, _, err := loadPolicies(o.policies, !o.noDefaults)
	if err != nil {
		return err
	}
	if len(o.comparePolicies) > 0 {
		return o.compare(cmd, pols, req)
	}
	p, err := planner.New(cmd.Context(), pols, engine.Options{})
	if err != nil {
		return err
	}
	// The change set is kept for the text output, which shows what
	// changed inside each file: Plan, in two steps.
	cs, err := changeset.Diff(req.From, req.To)
	if err != nil {
		return err
	}
	cs.Pool, cs.SingleNode = req.Pool, req.SingleNode
	plan, err := p.PlanChanges(cmd.Context(), cs, req.PoolLabels)
	if err != nil {
		return err
	}
	if err := writePlan(cmd.OutOrStdout(), plan, cs, o.output); err != nil {
		return err
	}
	if len(plan.Unreconcilable) > 0 {
		return exitError{exitUnreconcilable}
	}
	return nil
}

func readMachineConfig(path string) (*machineconfig.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, unwrapOSError(err))
	}
	return machineconfig.Parse(path, data)
}

// loadPolicies reads the given policy paths; with defaults, the embedded
// default policy comes first unless a loaded policy replaces it by name.
func loadPolicies(paths []string, defaults bool) ([]policy.Policy, []policy.Module, error) {
	pols, loose, err := loader.Load(paths...)
	if err != nil {
		return nil, nil, err
	}
	if defaults {
		pols = policy.WithDefaultPolicy(pols)
	}
	return pols, loose, nil
}

// unwrapOSError drops the path an os error repeats: messages name it first.
func unwrapOSError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func writePlan(w io.Writer, plan *planner.Plan, cs *changeset.ChangeSet, format string) error {
	if ok, err := writeDocument(w, plan, format); ok {
		return err
	}
	return writeText(w, plan, cs)
}

// writeText is the readable explanation: the verdict, then one line per
// change with the policy that claimed it and what it asked for, and under
// a file whose contents changed, what changed inside it (from cs, when
// given).
func writeText(w io.Writer, plan *planner.Plan, cs *changeset.ChangeSet) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Plan %s -> %s\n", plan.From, plan.To)
	if len(plan.Unreconcilable) > 0 {
		b.WriteString("  UNRECONCILABLE: the node cannot apply this change in place:\n")
		for _, u := range plan.Unreconcilable {
			fmt.Fprintf(&b, "    %s: %s\n", u.Field, u.Reason)
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "  actions: %s\n", planner.FormatActions(plan.Actions))
	fmt.Fprintf(&b, "  drain:   %s\n", yesNo(plan.Drain))
	fmt.Fprintf(&b, "  reboot:  %s\n", yesNo(plan.Reboot))
	if len(plan.Reasons) == 0 {
		b.WriteString("No changes.\n")
	} else {
		fmt.Fprintf(&b, "Changes (%d):\n", len(plan.Reasons))
		width := 0
		for _, r := range plan.Reasons {
			width = max(width, len(r.Change))
		}
		inside := contentLines(cs)
		for _, r := range plan.Reasons {
			by := "policy " + r.Policy
			if r.Policy == planner.NoPolicy {
				by = "no policy"
			}
			if r.Match != "" && !strings.HasSuffix(r.Change, r.Match) && !strings.Contains(r.Change, r.Match+":") {
				by += " (" + r.Match + ")"
			}
			line := fmt.Sprintf("  %-*s  %s: %s", width, r.Change, by, planner.FormatActions(r.Actions))
			if r.Detail != "" {
				line += " -- " + r.Detail
			}
			b.WriteString(line + "\n")
			for _, l := range inside[r.Change] {
				b.WriteString("      " + l + "\n")
			}
			delete(inside, r.Change) // once, under the first of tied claims
		}
	}
	fmt.Fprintf(&b, "Policy revision: %s\n", plan.PolicyRevision)
	_, err := io.WriteString(w, b.String())
	return err
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// maxPathsShown bounds the changed paths listed under a file.
const maxPathsShown = 20

// contentLines says, for each changed file whose contents were read (by
// the change's description, as reasons name it), what changed inside it:
// the top-level keys and the paths of a parsed document, or the lines of a
// text.
func contentLines(cs *changeset.ChangeSet) map[string][]string {
	out := map[string][]string{}
	if cs == nil {
		return out
	}
	for i := range cs.Changes {
		c := &cs.Changes[i]
		if c.Kind != changeset.KindFile || c.Op != changeset.OpChanged {
			continue
		}
		cc := cs.Contents(c.ID)
		if cc == nil || cc.Diff == nil {
			continue
		}
		truncated := ""
		if cc.DiffTruncated {
			truncated = fmt.Sprintf(" (the first %d differences)", len(cc.Diff))
		}
		if !cc.DataDiff {
			added := 0
			for _, e := range cc.Diff {
				if e.Op == changeset.DiffAdded {
					added++
				}
			}
			out[c.Describe()] = []string{fmt.Sprintf("changed lines: +%d/-%d%s", added, len(cc.Diff)-added, truncated)}
			continue
		}
		formats := cc.Old.Format
		if cc.New.Format != formats {
			formats += " → " + cc.New.Format
		}
		if len(cc.Diff) == 0 {
			out[c.Describe()] = []string{fmt.Sprintf("the same data (%s): only formatting changed", formats)}
			continue
		}
		var keys, paths []string
		seen := map[string]bool{}
		for _, e := range cc.Diff {
			p := make([]string, len(e.Path))
			for i, k := range e.Path {
				p[i] = fmt.Sprint(k)
			}
			if len(p) > 0 && !seen[p[0]] {
				seen[p[0]] = true
				keys = append(keys, p[0])
			}
			path := strings.Join(p, ".")
			if len(p) == 0 {
				path = "(the whole document)"
			}
			paths = append(paths, path+" ("+e.Op+")")
		}
		if len(paths) > maxPathsShown {
			paths = append(paths[:maxPathsShown], fmt.Sprintf("and %d more", len(paths)-maxPathsShown))
		}
		keyList := "none (the whole document)"
		if len(keys) > 0 {
			keyList = strings.Join(keys, ", ")
		}
		out[c.Describe()] = []string{
			fmt.Sprintf("changed keys: %s (%s)%s", keyList, formats, truncated),
			"changed paths: " + strings.Join(paths, ", "),
		}
	}
	return out
}

// checkMCOFlags: --mco plans with the MCO's rules, not ndp's policies, so
// the flags that choose ndp's policies do not go with it.
func (o *planOptions) checkMCOFlags(cmd *cobra.Command) error {
	if !o.mco {
		if o.machineConfiguration != "" {
			return usageError{errors.New("--machineconfiguration goes with --mco")}
		}
		return nil
	}
	for _, name := range []string{"policy", "no-defaults", "compare-policy", "pool", "pool-labels"} {
		if cmd.Flags().Changed(name) {
			return usageError{fmt.Errorf("--%s chooses ndp's policies; --mco uses the MCO's (give its MachineConfiguration with --machineconfiguration)", name)}
		}
	}
	return nil
}

// mcoPlan is `ndp plan --mco -o json|yaml`: the MCO's decision and the
// policy list it used.
type mcoPlan struct {
	*mcorules.Decision `json:",inline"`
	PolicySource       mcorules.PolicySource `json:"policySource"`
}

func (o *planOptions) runMCO(cmd *cobra.Command, from, to *machineconfig.Config) error {
	var mc *operatorv1.MachineConfiguration
	if o.machineConfiguration != "" {
		var err error
		if mc, err = readMachineConfiguration(cmd.ErrOrStderr(), o.machineConfiguration); err != nil {
			return err
		}
	}
	in, src := mcorules.For(from, to, mc, o.singleNode)
	d, err := mcorules.Decide(in)
	if err != nil {
		return err
	}
	plan := mcoPlan{Decision: d, PolicySource: src}
	w := cmd.OutOrStdout()
	if ok, werr := writeDocument(w, plan, o.output); ok {
		err = werr
	} else {
		err = writeMCOText(w, plan, o.singleNode)
	}
	if err != nil {
		return err
	}
	if len(d.Refused) > 0 {
		return exitError{exitUnreconcilable}
	}
	return nil
}

// readMachineConfiguration reads the MachineConfiguration file as `ndp
// import machineconfiguration` does (strictly, errors with file, object,
// field and line; warnings to stderr) and checks its node disruption
// policy as the API server would.
func readMachineConfiguration(stderr io.Writer, path string) (*operatorv1.MachineConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, unwrapOSError(err))
	}
	src, warnings, err := mcoimport.Read(path, data)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "Warning: %s\n", w)
	}
	if err := mcorules.Validate(src.Object.Spec.NodeDisruptionPolicy); err != nil {
		ie := &machineconfig.InputError{Object: fmt.Sprintf("%s: %s %q", path, mcoimport.Kind, src.Object.Name), Err: err}
		var fe *mcorules.FieldError
		if errors.As(err, &fe) {
			ie.Field, ie.Err = fe.Field, fe.Err
			if src.Line != nil {
				ie.Line = src.Line(fe.Field)
			}
		}
		return nil, ie
	}
	return src.Object, nil
}

// writeMCOText is `ndp explain` for the MCO: the verdict, then each change
// with the MCO rule that decided it and that rule's actions.
func writeMCOText(w io.Writer, plan mcoPlan, singleNode bool) error {
	d := plan.Decision
	var b strings.Builder
	fmt.Fprintf(&b, "MCO plan %s -> %s\n", d.From, d.To)
	fmt.Fprintf(&b, "  policies: %s\n", describeSource(plan.PolicySource))
	if plan.PolicySource.Stale {
		fmt.Fprintf(&b, "  STALE: MachineConfiguration cluster's status is behind its spec (generation %d, observed %d): the MCO's daemon waits up to 2 minutes per attempt for its operator, then marks the node Degraded and retries; this is what it does once the operator has written the merged spec\n",
			plan.PolicySource.Generation, plan.PolicySource.ObservedGeneration)
	}
	if len(d.Refused) > 0 {
		b.WriteString("  REFUSED: the MCO's daemon cannot apply this change in place (the node goes Unreconcilable, nothing is applied):\n")
		for _, r := range d.Refused {
			fmt.Fprintf(&b, "    %s\n", r)
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	actions := mcorules.FormatActions(d.Actions)
	if actions == "" {
		actions = "(none: no action at all)"
	}
	fmt.Fprintf(&b, "  actions: %s\n", actions)
	drain := yesNo(d.Drain)
	if singleNode && !d.Drain {
		drain += " (single node: the MCO never drains)"
	}
	fmt.Fprintf(&b, "  drain:   %s\n", drain)
	fmt.Fprintf(&b, "  reboot:  %s\n", yesNo(d.Reboot))
	if d.Error != "" {
		fmt.Fprintf(&b, "  FAILS: the MCO's daemon fails this update (the node goes Degraded and retries): %s\n", d.Error)
	}
	fmt.Fprintf(&b, "Changes (%d):\n", len(d.Rules))
	width := 0
	for _, r := range d.Rules {
		width = max(width, len(r.Change))
	}
	for _, r := range d.Rules {
		acts := mcorules.FormatActions(r.Actions)
		if acts == "" {
			acts = "no action"
		}
		line := fmt.Sprintf("  %-*s  %s → %s", width, r.Change, r.Rule, acts)
		if r.Detail != "" {
			line += " -- " + r.Detail
		}
		b.WriteString(line + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func describeSource(s mcorules.PolicySource) string {
	switch s.From {
	case "status":
		return fmt.Sprintf("MachineConfiguration cluster's status (generation %d, current)", s.Generation)
	case "spec":
		if s.Stale {
			return "MachineConfiguration cluster's spec merged with the MCO's defaults (its status is stale)"
		}
		return "MachineConfiguration cluster's spec merged with the MCO's defaults"
	}
	return "the MCO's defaults (no MachineConfiguration given)"
}
