package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/mco/mcoentries"
	"github.com/ndp-dev/ndp/mco/mcoimport"
	"github.com/ndp-dev/ndp/mco/mcorules"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/loader"
	"github.com/ndp-dev/ndp/planner/policy"
)

func newExportCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export machineconfiguration --policy PATH... [--from OLD --to NEW]",
		Short: "Print the MachineConfiguration whose node disruption policy makes the Machine Config Operator do ndp's plans",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unknown resource %q: ndp exports a machineconfiguration", args[0])}
			}
			return usageError{errors.New("what to export? ndp export machineconfiguration --policy PATH...")}
		},
		RunE: func(*cobra.Command, []string) error { return nil },
	}
	cmd.AddCommand(newExportMachineConfigurationCommand())
	return cmd
}

type exportOptions struct {
	updateOptions
	policies             []string
	bundles              []string
	machineConfiguration string
	output               string
}

func newExportMachineConfigurationCommand() *cobra.Command {
	o := &exportOptions{}
	cmd := &cobra.Command{
		Use:     "machineconfiguration --policy PATH... [--bundle FILE]... [--from OLD --to NEW] [--single-node] [--machineconfiguration FILE] [-o yaml|json]",
		Aliases: []string{"machineconfigurations"},
		Short:   "Print the MachineConfiguration entries ndp keeps in the MCO's own node disruption policy",
		Long: `Print, as YAML (or JSON with -o json) on stdout, the operator.openshift.io/v1 MachineConfiguration
"cluster" whose spec.nodeDisruptionPolicy holds the entries ndp keeps there (ndp-controller
--mco-entries), so that the Machine Config Operator's daemon does ndp's plans. It is the inverse of
ndp import machineconfiguration.

The static entries come from the policies (--policy, as ndp plan takes them; --bundle, OPA bundles),
with ndp's built-in default policy: a declarative file, unit or sshkey entry of a cluster-wide
policy whose decision does not depend on what changed in the file. With --from and --to, the
per-update entries of that update are added: an exact entry for each change the MCO would otherwise
decide differently from ndp's plan (--single-node, --pool and --pool-labels as for ndp plan).

With --machineconfiguration FILE (the cluster's, as oc get machineconfiguration cluster -o yaml
prints it), ndp's entries are computed over the administrator's, and the spec printed holds both,
as the MCO merges them; an entry of ndp's the administrator holds with other actions is left out.
Only spec.nodeDisruptionPolicy is printed. The object is checked against the MCO's API (its CRD
schema and rules) before it is printed.

On stderr: each decision the MCO cannot be given and why, naming the policy, and, with --from and
--to, what the MCO would do for the update, what it does with these entries, and ndp's plan.

Example:
  ndp export machineconfiguration --policy examples/policies/kubelet-live.yaml \
      --from examples/machineconfigs/kubelet-maxpods/old.yaml \
      --to examples/machineconfigs/kubelet-maxpods/new.yaml > mc.yaml

Exit codes: 0 printed (also when some decisions cannot be expressed); 1 invalid input or policy, or
entries the MCO's API would refuse; 2 usage.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unexpected arguments %q: give policies with --policy", args)}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.policies, "policy", nil, "NodeDisruptionPolicy YAML, .rego file, directory of them, or OPA bundle .tar.gz (repeatable)")
	f.StringArrayVar(&o.bundles, "bundle", nil, "an OPA bundle `FILE` (.tar.gz) of a policy (repeatable)")
	f.StringVar(&o.from, "from", "", "with --to: the MachineConfig nodes run now, to add that update's per-update entries")
	f.StringVar(&o.to, "to", "", "with --from: the MachineConfig nodes move to")
	f.BoolVar(&o.singleNode, "single-node", false, "with --from/--to: a single-node cluster, never drained")
	f.StringVar(&o.pool, "pool", "", "with --from/--to: MachineConfigPool name passed to policies as input.pool")
	f.StringToStringVar(&o.poolLabels, "pool-labels", nil, "with --from/--to: the pool's labels (k=v,...): policies with a poolSelector apply only when it matches them")
	f.StringVar(&o.machineConfiguration, "machineconfiguration", "", "`FILE`, the cluster's MachineConfiguration: its entries are kept and ndp's computed over them")
	f.StringVarP(&o.output, "output", "o", "yaml", "output format: yaml or json")
	return cmd
}

func (o *exportOptions) run(cmd *cobra.Command) error {
	if o.output != "yaml" && o.output != "json" {
		return usageError{fmt.Errorf("--output must be yaml or json, not %q", o.output)}
	}
	if (o.from == "") != (o.to == "") {
		return usageError{errors.New("--from and --to go together: the update whose per-update entries to add")}
	}
	if o.from == "" {
		for _, name := range []string{"single-node", "pool", "pool-labels"} {
			if cmd.Flags().Changed(name) {
				return usageError{fmt.Errorf("--%s goes with --from and --to", name)}
			}
		}
	}
	for _, b := range o.bundles {
		if !strings.HasSuffix(b, ".tar.gz") && !strings.HasSuffix(b, ".tgz") {
			return usageError{fmt.Errorf("--bundle %s: expected an OPA bundle .tar.gz (give other policies with --policy)", b)}
		}
	}
	pols, _, err := loader.Load(append(append([]string(nil), o.policies...), o.bundles...)...)
	if err != nil {
		return err
	}
	pols = policy.WithDefaultPolicy(pols)
	var admin *operatorv1.MachineConfiguration
	if o.machineConfiguration != "" {
		if admin, err = readMachineConfiguration(cmd.ErrOrStderr(), o.machineConfiguration); err != nil {
			return err
		}
	}
	ctx := cmd.Context()
	pl, err := planner.New(ctx, pols, engine.Options{})
	if err != nil {
		return err
	}
	in := mcoentries.ExportInput{Planner: pl, Policies: pols, Admin: admin}
	if o.from != "" {
		req, err := o.request(cmd)
		if err != nil {
			return err
		}
		plan, err := pl.Plan(ctx, req)
		if err != nil {
			return err
		}
		in.Update = &mcoentries.Update{From: req.From, To: req.To, Plan: plan, SingleNode: o.singleNode}
	}
	res, err := mcoentries.Export(ctx, in)
	if err != nil {
		var fe *mcorules.FieldError
		if errors.As(err, &fe) {
			// Never printed: the API server would refuse it.
			return &machineconfig.InputError{Object: fmt.Sprintf("the exported %s %q (the MCO's API would refuse it)", mcoimport.Kind, mcoentries.MachineConfigurationName), Field: fe.Field, Err: fe.Err}
		}
		return err
	}
	obj, err := res.Object()
	if err != nil {
		return err
	}
	var out []byte
	if o.output == "json" {
		if out, err = json.MarshalIndent(obj.Object, "", "  "); err == nil {
			out = append(out, '\n')
		}
	} else {
		out, err = yaml.Marshal(obj.Object)
	}
	if err != nil {
		return err
	}
	if _, err := cmd.OutOrStdout().Write(out); err != nil {
		return err
	}
	return writeExportReport(cmd.ErrOrStderr(), res, in.Update)
}

// writeExportReport tells, on stderr, what the MCO is not given and why,
// and what the update comes to.
func writeExportReport(w io.Writer, res *mcoentries.ExportResult, u *mcoentries.Update) error {
	var b strings.Builder
	for _, x := range res.Unexpressed {
		fmt.Fprintf(&b, "not expressed: %s\n", x)
	}
	if u != nil {
		ndp := mcoentries.PlanEffect(u.Plan.Actions, u.Plan.Drain, u.Plan.Reboot)
		if len(u.Plan.Unreconcilable) > 0 {
			ndp = "refused (" + u.Plan.Unreconcilable[0].String() + ")"
		}
		fmt.Fprintf(&b, "update %s -> %s: the MCO would %s; with these entries %s; ndp plans %s\n",
			u.Plan.From, u.Plan.To, verb(res.Today), res.Update.After, ndp)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// verb makes a DecisionEffect follow "would": "refuse it", "do nothing".
func verb(effect string) string {
	switch effect {
	case "refused":
		return "refuse it"
	case "nothing":
		return "do nothing"
	}
	return effect
}
