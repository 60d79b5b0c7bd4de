package main

import (
	"encoding/json"
	"fmt"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// newHoldClient connects to the cluster and names the kubeconfig's user
// ("" if none); the tests replace it.
var newHoldClient = func(o *statusOptions) (client.Client, string, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, "", err
	}
	cfg.UserAgent = "ndp-hold " + cfg.UserAgent
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, "", err
	}
	return c, kubeconfigUser(o), nil
}

// kubeconfigUser is the user (AuthInfo) of the kubeconfig context in use:
// who held the node, as far as the kubeconfig tells.
func kubeconfigUser(o *statusOptions) string {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.context}).RawConfig()
	if err != nil {
		return ""
	}
	name := o.context
	if name == "" {
		name = raw.CurrentContext
	}
	if ctx := raw.Contexts[name]; ctx != nil {
		return ctx.AuthInfo
	}
	return ""
}

func newHoldCommand() *cobra.Command {
	o := &statusOptions{}
	var reason, by string
	cmd := &cobra.Command{
		Use:   "hold NODE [--reason TEXT]",
		Short: "Hold a node out of the rollout: it starts no new update until released",
		Long: `Hold a node out of the rollout: the node gets the annotation ` + v1alpha1.HoldAnnotation + ` (its value the reason)
and ` + v1alpha1.HoldByAnnotation + ` (who held it: --by, else the kubeconfig's user). ndp's rollout skips it and sends the
pool's other nodes; its pool's RolloutHeld condition and ndp status say so. An update the node has
already started finishes. ndp release NODE ends the hold.

Exit codes: 0 held; 1 no cluster reachable, an unknown node or another error; 2 usage.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctrllog.SetLogger(logr.Discard())
			c, user, err := newHoldClient(o)
			if err != nil {
				return err
			}
			if by == "" {
				by = user
			}
			ann := map[string]any{v1alpha1.HoldAnnotation: reason, v1alpha1.HoldByAnnotation: nil}
			if by != "" {
				ann[v1alpha1.HoldByAnnotation] = by
			}
			if err := annotateNode(cmd, c, args[0], ann); err != nil {
				return err
			}
			msg := "node " + args[0] + " held"
			if reason != "" {
				msg += ": " + reason
			}
			if by != "" {
				msg += " (by " + by + ")"
			}
			fmt.Fprintln(cmd.OutOrStdout(), msg)
			return nil
		},
	}
	o.addClusterFlags(cmd, "")
	cmd.Flags().StringVar(&reason, "reason", "", "why the node is held (shown in the pool's condition and ndp status)")
	cmd.Flags().StringVar(&by, "by", "", "who holds the node (default: the kubeconfig's user)")
	return cmd
}

func newReleaseCommand() *cobra.Command {
	o := &statusOptions{}
	cmd := &cobra.Command{
		Use:   "release NODE",
		Short: "Release a node held by ndp hold: the rollout may send it again",
		Long: `Release a node held by ndp hold: its ` + v1alpha1.HoldAnnotation + ` and ` + v1alpha1.HoldByAnnotation + ` annotations are removed,
and the rollout may send it to its pool's target in its turn.

Exit codes: 0 released (or not held); 1 no cluster reachable, an unknown node or another error; 2 usage.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return removeMark(cmd, o, args[0], v1alpha1.HoldAnnotation, v1alpha1.HoldByAnnotation, func(string) string { return "released" }, "is not held")
		},
	}
	o.addClusterFlags(cmd, "")
	return cmd
}

func newRetryCommand() *cobra.Command {
	o := &statusOptions{}
	cmd := &cobra.Command{
		Use:   "retry NODE",
		Short: "Let the rollout send again a node that gave up its drain (onDrainTimeout Skip)",
		Long: `Let the rollout send again a node whose drain ran out of its pool's drainTimeout under onDrainTimeout
Skip: its ` + v1alpha1.DrainSkippedAnnotation + ` and ` + v1alpha1.DrainSkippedReasonAnnotation + ` annotations are removed, and the
rollout sends it to its pool's target in its turn (a new target does too, without retry).

Exit codes: 0 retried (or not skipped); 1 no cluster reachable, an unknown node or another error; 2 usage.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return removeMark(cmd, o, args[0], v1alpha1.DrainSkippedAnnotation, v1alpha1.DrainSkippedReasonAnnotation,
				func(target string) string { return "may go to " + target + " again" }, "skipped no drain")
		},
	}
	o.addClusterFlags(cmd, "")
	return cmd
}

// removeMark removes a node's mark (a hold, a skipped drain): key and its
// companion annotation, with one patch. done says what that did, given
// the mark's value; absent what it says of a node without the mark.
func removeMark(cmd *cobra.Command, o *statusOptions, node, key, companion string, done func(value string) string, absent string) error {
	ctrllog.SetLogger(logr.Discard())
	c, _, err := newHoldClient(o)
	if err != nil {
		return err
	}
	var n corev1.Node
	if err := c.Get(cmd.Context(), client.ObjectKey{Name: node}, &n); err != nil {
		return nodeError(node, err)
	}
	value, ok := n.Annotations[key]
	if !ok {
		fmt.Fprintf(cmd.OutOrStdout(), "node %s %s\n", node, absent)
		return nil
	}
	if err := annotateNode(cmd, c, node, map[string]any{key: nil, companion: nil}); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "node %s %s\n", node, done(value))
	return nil
}

// annotateNode sets (a string) or removes (nil) the node's annotations
// with one merge patch; a node that does not exist is an error naming it.
func annotateNode(cmd *cobra.Command, c client.Client, name string, ann map[string]any) error {
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	n := &corev1.Node{}
	n.Name = name
	if err := c.Patch(cmd.Context(), n, client.RawPatch(types.MergePatchType, body)); err != nil {
		return nodeError(name, err)
	}
	return nil
}

func nodeError(name string, err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("node %q not found (kubectl get nodes lists the cluster's nodes)", name)
	}
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("node %q: not allowed to annotate it: %w", name, err)
	}
	return fmt.Errorf("node %q: %w", name, err)
}
