package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/loader"
	"github.com/ndp-dev/ndp/planner/policy"
)

type planOptions struct {
	from, to   string
	policies   []string
	noDefaults bool
	singleNode bool
	pool       string
	poolLabels map[string]string
	output     string
	// comparePolicies: plan again with these policies added (--compare-policy).
	comparePolicies []string
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
	from, err := readMachineConfig(o.from)
	if err != nil {
		return err
	}
	to, err := readMachineConfig(o.to)
	if err != nil {
		return err
	}
	pols, _, err := loadPolicies(o.policies, !o.noDefaults)
	if err != nil {
		return err
	}
	req := planner.Request{From: from, To: to, Pool: o.pool, SingleNode: o.singleNode}
	if cmd.Flags().Changed("pool-labels") {
		req.PoolLabels = o.poolLabels
	}
	if len(o.comparePolicies) > 0 {
		return o.compare(cmd, pols, req)
	}
	p, err := planner.New(cmd.Context(), pols, engine.Options{})
	if err != nil {
		return err
	}
	plan, err := p.Plan(cmd.Context(), req)
	if err != nil {
		return err
	}
	if err := writePlan(cmd.OutOrStdout(), plan, o.output); err != nil {
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

func writePlan(w io.Writer, plan *planner.Plan, format string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(plan)
	case "yaml":
		b, err := yaml.Marshal(plan)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return writeText(w, plan)
}

// writeText is the readable explanation: the verdict, then one line per
// change with the policy that claimed it and what it asked for.
func writeText(w io.Writer, plan *planner.Plan) error {
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
