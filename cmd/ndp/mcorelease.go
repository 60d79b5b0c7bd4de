package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ndp-dev/ndp/mco/mcoentries"
)

// newReleaseMCOEntriesCommand removes ndp's per-update entries (or, with
// --all, every entry of ndp's) from the MCO's node disruption policy. It
// needs no ndp-controller: what the admission guard's refusal tells an
// administrator to run, ndp running or not.
func newReleaseMCOEntriesCommand() *cobra.Command {
	o := &statusOptions{}
	var all bool
	cmd := &cobra.Command{
		Use:   "release-mco-entries",
		Short: "Remove ndp's per-update entries (--all: every entry of ndp's) from the MCO's node disruption policy",
		Long: `Remove ndp's per-update entries from MachineConfiguration cluster's spec.nodeDisruptionPolicy, with the
annotation ` + mcoentries.GuardAnnotation + ` that makes the admission guard refuse other changes to their paths.
The MCO then decides those paths with its own rules again (and the administrator's entries, which this never
touches); a change the guard refused can be applied. ndp-controller writes per-update entries again only for
updates it plans from then on.

With --all, every entry ndp keeps is removed, the static ones too: run it before uninstalling ndp (a running
ndp-controller --mco-entries writes its static entries back).

It is a server-side apply by field manager ndp of what ndp's entries remain: no other manager's entry is
touched. Without ndp at hand, the same as --all:
  kubectl apply --server-side --field-manager=ndp -f - <<<'{"apiVersion":"operator.openshift.io/v1","kind":"MachineConfiguration","metadata":{"name":"cluster"}}'

Exit codes: 0 released (or nothing to release); 1 no cluster reachable or another error; 2 usage.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrllog.SetLogger(logr.Discard())
			c, _, err := newHoldClient(o)
			if err != nil {
				return err
			}
			var mc operatorv1.MachineConfiguration
			if err := c.Get(cmd.Context(), client.ObjectKey{Name: mcoentries.MachineConfigurationName}, &mc); err != nil {
				if apierrors.IsNotFound(err) {
					fmt.Fprintln(cmd.OutOrStdout(), "no MachineConfiguration cluster: nothing to release")
					return nil
				}
				return fmt.Errorf("reading MachineConfiguration cluster: %w", err)
			}
			keep, released, err := releasedEntries(&mc, all)
			if err != nil {
				return err
			}
			if len(released) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "ndp keeps no such entry in MachineConfiguration cluster: nothing to release")
				return nil
			}
			u, err := mcoentries.ApplyObject(keep, nil)
			if err != nil {
				return err
			}
			if err := c.Apply(cmd.Context(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(mcoentries.FieldManager)); err != nil {
				var status apierrors.APIStatus
				if errors.As(err, &status) && apierrors.IsForbidden(err) {
					return fmt.Errorf("releasing ndp's entries: %w (it needs patch on machineconfigurations/cluster)", err)
				}
				return fmt.Errorf("releasing ndp's entries: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "released from MachineConfiguration cluster: %s\n", strings.Join(released, ", "))
			return nil
		},
	}
	o.addClusterFlags(cmd, "")
	cmd.Flags().BoolVar(&all, "all", false, "remove every entry ndp keeps, the static ones too (before uninstalling)")
	return cmd
}

// releasedEntries splits ndp's entries into those kept and those released
// (as "file /etc/x"): per-update ones (the guard's subjects), or all.
func releasedEntries(mc *operatorv1.MachineConfiguration, all bool) (mcoentries.Entries, []string, error) {
	own, err := mcoentries.OwnershipOf(mc)
	if err != nil {
		return mcoentries.Entries{}, nil, err
	}
	live := &mcoentries.Live{MC: mc, Spec: mc.Spec.NodeDisruptionPolicy, Own: own}
	mine := live.Mine()
	drop := mcoentries.Subjects(live.UpdateEntries())
	if all {
		drop = mcoentries.Subjects(mine)
	}
	var released []string
	for _, s := range drop {
		released = append(released, mcoentries.SubjectText(s))
	}
	if len(mcoentries.Guarded(mc)) > 0 && len(released) == 0 {
		// The guard stands without entries (ndp locked before writing):
		// releasing it is all there is to do.
		released = append(released, "the guard annotation "+mcoentries.GuardAnnotation)
	}
	return mcoentries.Without(mine, drop), released, nil
}
