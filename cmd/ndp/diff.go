package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ndp-dev/ndp/clusterdiff"
)

// Exit codes of ndp diff, as kubectl diff's: 0 nothing changes (or
// nothing --fail-on names), 1 a pool changes, more than 1 an error. Every
// error of ndp diff, a usage error too, exits 2: a CI gate reads 1 as
// "this change set changes nodes", never as "the diff could not run".
const (
	exitDiffChanged = 1
	exitDiffError   = 2
)

// The values of --fail-on: which pools' changes exit 1.
const (
	failOnAny    = "any"    // any pool renders a new config (the default, as kubectl diff)
	failOnDrain  = "drain"  // some nodes' plan drains or reboots them
	failOnReboot = "reboot" // some nodes' plan reboots them
)

type diffOptions struct {
	statusOptions
	files     []string
	kustomize string
	deletes   []string
	state     []string
	failOn    string
	mode      string
}

// newDiffReader connects to the cluster, read-only, and says which it is
// ("https://api.example.com:6443"); the tests replace it.
var newDiffReader = func(o *statusOptions) (client.Reader, string, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, "", err
	}
	cfg.UserAgent = "ndp-diff " + rest.DefaultKubernetesUserAgent()
	// The API server's warnings (a deprecated API) would be printed on
	// stderr beside the diff; the diff says what it read in its notes.
	cfg.WarningHandler = rest.NoWarnings{}
	c, err := client.New(cfg, client.Options{Scheme: clusterdiff.Scheme})
	if err != nil {
		return nil, "", fmt.Errorf("connecting to %s: %w", cfg.Host, err)
	}
	// Only Get and List reach the diff: nothing can assert its way back to
	// the client's writes.
	return readOnly{c}, cfg.Host, nil
}

// readOnly is a client.Reader that is nothing more.
type readOnly struct{ r client.Reader }

func (c readOnly) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.r.Get(ctx, key, obj, opts...)
}

func (c readOnly) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.r.List(ctx, list, opts...)
}

// diffEngine is clusterdiff.Diff; the tests replace it.
var diffEngine = clusterdiff.Diff

func newDiffCommand() *cobra.Command {
	o := &diffOptions{}
	cmd := &cobra.Command{
		Use:   "diff -f FILE|DIR [-f ...] [-k DIR] [--delete KIND/NAME ...] [--state FILE|DIR ...] [-o text|markdown|json|yaml] [--fail-on reboot|drain|any]",
		Short: "Show what applying manifests would do to each MachineConfigPool's nodes: the rendered config, the plans, the objects behind them",
		Long: `Show, like kubectl diff, what applying manifests (-f, -k) and deleting objects (--delete) would do
to the nodes: for each MachineConfigPool, the rendered config it would move to (named as the MCO names
it on OpenShift), the objects that cause it, its nodes by the config they run and each group's plan
(on OpenShift the MCO's, with ndp's beside it and the MachineConfiguration entries that would give
ndp's), every change with the rule that decided it and the MachineConfigs behind it, and what the
pool's RolloutPolicies would do with the update. KubeletConfigs, ContainerRuntimeConfigs and the
image-mirror objects are rendered into the MachineConfigs their controllers would write.

Nothing is written anywhere. Without --state the cluster is read (found like kubectl finds it:
--kubeconfig, $KUBECONFIG, ~/.kube/config, in-cluster); with --state a snapshot is read instead
(oc get mc,mcp,kubeletconfig,... -o yaml, or a must-gather): see docs/diff.md for what it must hold.

-o markdown is for a pull request comment; -o json and -o yaml print the report documented in
docs/diff.md.

Exit codes, as kubectl diff's: 0 no pool changes; 1 a pool changes (with --fail-on reboot: only when
some nodes' plan reboots; drain: drains or reboots; any: any change, the default), also a pool whose
change the MCO would refuse; 2 an error, a usage error too (nothing is printed on stdout then).`,
		Example: `  # A pull request's manifests against a committed snapshot, as a CI gate that fails only on a reboot:
  kubectl ndp diff --state cluster-snapshot/ -f clusters/prod/machineconfigs/ -o markdown --fail-on reboot

  # The live cluster, a kustomization and a deletion:
  kubectl ndp diff -k overlays/prod --delete MachineConfig/50-worker-chrony`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("takes no arguments (manifests go with -f), received %q", args)}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return o.runGuarded(cmd) },
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.files, "filename", "f", nil, "manifests to apply: a file, a directory, or - for stdin (repeatable)")
	f.StringVarP(&o.kustomize, "kustomize", "k", "", "a kustomization directory to build and apply")
	f.StringArrayVar(&o.deletes, "delete", nil, "an object to delete, as KIND/NAME (repeatable)")
	f.StringArrayVar(&o.state, "state", nil, "read the cluster from this snapshot (a file or a directory, repeatable) instead of the live cluster")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text, markdown, json or yaml")
	f.StringVar(&o.failOn, "fail-on", "", "exit 1 only when some nodes' plan does this: reboot, drain (or reboot) or any change (default: any change, as kubectl diff)")
	f.StringVar(&o.mode, "mode", "auto", "whose plans: mco (the MCO decides, ndp's plan beside it), ndp (ndp decides) or auto (mco when the state holds the MCO's ControllerConfig)")
	o.addClusterFlags(cmd, "")
	return cmd
}

// runGuarded runs the diff so that every failure exits 2, as kubectl
// diff's do: a usage error through run's own message, any other error
// (a loader's, the engine's, a panic) with its message here.
func (o *diffOptions) runGuarded(cmd *cobra.Command) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v", r)
		}
		var ue usageError
		var ee exitError
		if err == nil || errors.As(err, &ue) || errors.As(err, &ee) {
			return
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "Error: %v\n", err)
		err = exitError{code: exitDiffError}
	}()
	return o.run(cmd)
}

func (o *diffOptions) validate() error {
	switch o.output {
	case "text", "markdown", "json", "yaml":
	default:
		return usageError{fmt.Errorf("--output must be text, markdown, json or yaml, not %q", o.output)}
	}
	switch o.failOn {
	case "", failOnAny, failOnDrain, failOnReboot:
	default:
		return usageError{fmt.Errorf("--fail-on must be reboot, drain or any, not %q", o.failOn)}
	}
	switch o.mode {
	case "auto", clusterdiff.ModeMCO, clusterdiff.ModeNDP:
	default:
		return usageError{fmt.Errorf("--mode must be auto, mco or ndp, not %q", o.mode)}
	}
	if len(o.files) == 0 && o.kustomize == "" && len(o.deletes) == 0 {
		return usageError{errors.New("nothing to diff: give manifests with -f FILE|DIR, a kustomization with -k DIR, or --delete KIND/NAME")}
	}
	for _, f := range o.files {
		if f == "" {
			return usageError{errors.New("-f needs a file, a directory or -")}
		}
	}
	if len(o.state) > 0 && (o.kubeconfig != "" || o.context != "") {
		return usageError{errors.New("--state reads a snapshot, --kubeconfig and --context a live cluster: give one or the other")}
	}
	stdin := 0
	for _, s := range o.state {
		if s == "" {
			return usageError{errors.New("--state needs a file or a directory")}
		}
		if s == "-" {
			stdin++
		}
	}
	for _, f := range o.files {
		if f == "-" {
			stdin++
		}
	}
	if stdin > 1 {
		return usageError{errors.New("stdin (-) can be read once: give it to one -f or --state")}
	}
	return nil
}

func (o *diffOptions) run(cmd *cobra.Command) error {
	if err := o.validate(); err != nil {
		return err
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	cs, err := o.changeSet()
	if err != nil {
		return err
	}
	state, notes, stateName, err := o.readState(ctx)
	if err != nil {
		return err
	}
	mode := o.mode
	if mode == "auto" {
		mode = ""
	}
	report, err := diffEngine(ctx, state, cs, clusterdiff.Options{Mode: mode, Now: time.Now(), StateName: stateName})
	if err != nil {
		return err
	}
	if report == nil {
		return errors.New("the diff returned no report")
	}
	if report.State == "" {
		report.State = stateName
	}
	// What reading the state taught comes before what the diff did.
	report.Notes = append(append([]string(nil), notes...), report.Notes...)
	var out bytes.Buffer
	if err := writeDiff(&out, report, o.output); err != nil {
		return err
	}
	// Nothing reaches stdout unless all of it was made.
	if _, err := cmd.OutOrStdout().Write(out.Bytes()); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	if code := exitCodeFor(report, o.failOn); code != exitOK {
		return exitError{code: code}
	}
	return nil
}

// changeSet reads -f, -k and --delete.
func (o *diffOptions) changeSet() (clusterdiff.ChangeSet, error) {
	var cs clusterdiff.ChangeSet
	if len(o.files) > 0 {
		entries, err := clusterdiff.LoadManifests(o.files)
		if err != nil {
			return cs, err
		}
		cs.Apply = append(cs.Apply, entries...)
	}
	if o.kustomize != "" {
		entries, err := clusterdiff.LoadKustomize(o.kustomize)
		if err != nil {
			return cs, err
		}
		cs.Apply = append(cs.Apply, entries...)
	}
	for _, d := range o.deletes {
		k, err := clusterdiff.ParseDeletion(d)
		if err != nil {
			return cs, usageError{err} // it names the argument
		}
		cs.Delete = append(cs.Delete, k)
	}
	if len(cs.Apply) == 0 && len(cs.Delete) == 0 {
		from := append([]string(nil), o.files...)
		if o.kustomize != "" {
			from = append(from, o.kustomize)
		}
		return cs, fmt.Errorf("no objects to diff in %s", strings.Join(from, ", "))
	}
	return cs, nil
}

// readState reads the snapshot (--state) or the live cluster, with the
// notes of the reading and what the report calls it.
func (o *diffOptions) readState(ctx context.Context) (*clusterdiff.Objects, []string, string, error) {
	if len(o.state) > 0 {
		objs, notes, err := clusterdiff.LoadSnapshot(o.state...)
		if err != nil {
			return nil, nil, "", err
		}
		return objs, notes, "snapshot " + strings.Join(o.state, ", "), nil
	}
	ctrllog.SetLogger(logr.Discard())
	r, host, err := newDiffReader(&o.statusOptions)
	if err != nil {
		return nil, nil, "", err
	}
	objs, notes, err := clusterdiff.ReadLive(ctx, r)
	if err != nil {
		return nil, nil, "", err
	}
	name := "live cluster " + host
	if o.context != "" {
		name += " (context " + o.context + ")"
	}
	return objs, notes, name, nil
}

// exitCodeFor is the exit code of a report under --fail-on (""
// is kubectl diff's: any change). A pool whose change the MCO would
// refuse (an error: it goes Degraded) and a plan no node can apply in
// place (unreconcilable) fail under every --fail-on.
func exitCodeFor(r *clusterdiff.Report, failOn string) int {
	for _, p := range r.Pools {
		if p.Error != "" || p.Effect == clusterdiff.EffectUnreconcilable {
			return exitDiffChanged
		}
		if !p.Changed {
			continue
		}
		if failOn == "" || failOn == failOnAny {
			return exitDiffChanged
		}
		for _, g := range p.Groups {
			if planFails(g.Plan, failOn) {
				return exitDiffChanged
			}
		}
	}
	if r.Changed && (failOn == "" || failOn == failOnAny) {
		return exitDiffChanged
	}
	return exitOK
}

// planFails tells whether a plan does what --fail-on names: the plan that
// happens (the MCO's on OpenShift), not ndp's beside it.
func planFails(p clusterdiff.Plan, failOn string) bool {
	reboot := p.Reboot || p.Effect == clusterdiff.EffectReboot || p.Effect == clusterdiff.EffectUnreconcilable || len(p.Refused) > 0
	switch failOn {
	case failOnReboot:
		return reboot
	case failOnDrain:
		return reboot || p.Drain || p.Effect == clusterdiff.EffectDrain
	}
	return true
}
