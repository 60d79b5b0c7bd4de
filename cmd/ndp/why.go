package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/mco/mcoguard"
)

type whyOptions struct {
	statusOptions
	update   int
	file     string
	evidence bool
}

func newWhyCommand() *cobra.Command {
	o := &whyOptions{}
	cmd := &cobra.Command{
		Use:   "why NODE [--update N] [--evidence] [-o text|json|yaml] [--file FILE]",
		Short: "Show why a node was drained or rebooted: its last updates, what changed, what decided it, what ran",
		Long: `Show the node's last updates, newest first (only the Nth with --update N, 1 = the newest), from its
NodeHistory: from which rendered config to which, pool, when, which daemon ran it (ndp-daemon, or the
MCO's daemon as ndp's advisor observed it), each change with its MachineConfigs and the policy or MCO
rule that decided it, what was planned or foretold, what ran or was observed (drain, each action,
reboot) with times, the boot IDs before and after, the result, and beside the MCO the verdict with
each check and its first proofs (--evidence: all). From a cluster it also shows the node's current config and state.
ndp keeps the last 10 updates of each node; the history is deleted with the node.

--file reads a saved NodeHistory (kubectl get nodehistory NODE -o yaml > FILE, yaml or json; a list
of them too) instead of the cluster. -o json|yaml prints {"node", "nodeState", "updates"}, the updates
as stored.

The cluster is found like kubectl finds it: --kubeconfig, $KUBECONFIG, ~/.kube/config, in-cluster.
Exit codes: 0 shown (also a known node with no update recorded); 1 unknown node, --update out of
range, unreadable file, no cluster reachable or another error; 2 usage.`,
		Args: oneArg("accepts one NODE, received %d"),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args[0]) },
	}
	f := cmd.Flags()
	f.IntVar(&o.update, "update", 0, "show only the Nth update, 1 = the newest (default: all)")
	f.BoolVar(&o.evidence, "evidence", false, "list every evidence line an observed update rests on (text; json and yaml always hold them)")
	f.StringVar(&o.file, "file", "", "read the NodeHistory from FILE (yaml or json) instead of the cluster")
	o.addClusterFlags(cmd, "")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text, json or yaml")
	return cmd
}

func (o *whyOptions) run(cmd *cobra.Command, node string) error {
	switch o.output {
	case "text", "json", "yaml":
	default:
		return usageError{fmt.Errorf("--output must be text, json or yaml, not %q", o.output)}
	}
	if o.update < 0 {
		return usageError{fmt.Errorf("--update must be 1 (the newest) or more, not %d", o.update)}
	}
	var v whyView
	if o.file != "" {
		h, err := readHistoryFile(o.file, node)
		if err != nil {
			return err
		}
		v = whyView{Node: node, History: h}
	} else {
		ctrllog.SetLogger(logr.Discard())
		c, err := newStatusClient(&o.statusOptions)
		if err != nil {
			return err
		}
		if v, err = collectWhy(cmd.Context(), c, node); err != nil {
			return err
		}
	}
	v.Update, v.Evidence = o.update, o.evidence
	if o.output == "text" {
		return writeWhyText(cmd.OutOrStdout(), v)
	}
	updates, err := selectUpdates(node, v.History, o.update)
	if err != nil {
		return err
	}
	if updates == nil {
		updates = []v1alpha1.NodeUpdate{}
	}
	if v.History == nil || len(v.History.Status.Updates) == 0 {
		// The explanation for a person; stdout stays the document.
		fmt.Fprint(cmd.ErrOrStderr(), noHistoryText(node, v.Mode))
	}
	return writeWhyDocument(cmd.OutOrStdout(), WhyReport{Node: node, NodeState: v.State, Updates: updates}, o.output)
}

func writeWhyDocument(w io.Writer, r WhyReport, format string) error {
	_, err := writeDocument(w, r, format)
	return err
}

// collectWhy reads the node and its NodeHistory. A node with neither is
// unknown (an error); a node without history is shown with why it has
// none.
func collectWhy(ctx context.Context, c client.Reader, name string) (whyView, error) {
	v := whyView{Node: name}
	var node corev1.Node
	switch err := c.Get(ctx, client.ObjectKey{Name: name}, &node); {
	case err == nil:
		a := node.Annotations
		s := &WhyNodeState{Current: a[ndpmcv1.CurrentConfigAnnotation], Desired: a[ndpmcv1.DesiredConfigAnnotation],
			State: a[ndpmcv1.StateAnnotation], Reason: a[ndpmcv1.ReasonAnnotation]}
		s.Updating = s.Desired != "" && s.Desired != s.Current
		v.State = s
	case apierrors.IsNotFound(err):
		v.NodeGone = true
	default:
		return v, fmt.Errorf("reading node %s: %w", name, err)
	}
	h := &v1alpha1.NodeHistory{}
	switch err := c.Get(ctx, client.ObjectKey{Name: name}, h); {
	case err == nil:
		v.History = h
	case meta.IsNoMatchError(err) || (apierrors.IsNotFound(err) && isMissingKind(err)):
		if v.NodeGone {
			return v, fmt.Errorf("node %q not found", name)
		}
		return v, errors.New("the cluster has no NodeHistory API (ndp.dev/v1alpha1 nodehistories): is a version of ndp that records updates installed?")
	case apierrors.IsNotFound(err):
		if v.NodeGone {
			return v, fmt.Errorf("node %q not found, and no NodeHistory of it", name)
		}
	default:
		return v, fmt.Errorf("reading NodeHistory %s: %w", name, err)
	}
	if (v.History == nil || len(v.History.Status.Updates) == 0) && v.State != nil {
		v.Mode = recordingMode(ctx, c, &node)
	}
	return v, nil
}

// isMissingKind tells a 404 for the resource (the API is not served) from
// one for the object.
func isMissingKind(err error) bool {
	var se *apierrors.StatusError
	if !errors.As(err, &se) || se.ErrStatus.Details == nil {
		return false
	}
	return se.ErrStatus.Details.Name == ""
}

// recordingMode tells who records the node's updates: ndp's advisor when
// the MCO manages the node, else ndp-daemon; unknown when the MCO's
// objects cannot be read.
func recordingMode(ctx context.Context, c client.Reader, node *corev1.Node) string {
	o, err := mcoguard.Observe(ctx, c, node)
	if err != nil {
		return whyModeUnknown
	}
	if mcoguard.Decide(o).StandDown {
		return whyModeAdvisor
	}
	return whyModeExecutor
}

// readHistoryFile reads a saved NodeHistory of node: the object, or a list
// (kubectl get nodehistory -o yaml) holding it.
func readHistoryFile(file, node string) (*v1alpha1.NodeHistory, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%s: not a NodeHistory in yaml or json: %w", file, err)
	}
	switch head.Kind {
	case v1alpha1.NodeHistoryKind:
		if head.APIVersion != v1alpha1.GroupVersion.String() {
			return nil, fmt.Errorf("%s: apiVersion %q, want %s", file, head.APIVersion, v1alpha1.GroupVersion)
		}
		h := &v1alpha1.NodeHistory{}
		if err := yaml.Unmarshal(data, h); err != nil {
			return nil, fmt.Errorf("%s: not a valid NodeHistory: %w", file, err)
		}
		if h.Name != node {
			return nil, fmt.Errorf("%s holds the NodeHistory of node %q, not %q", file, h.Name, node)
		}
		return h, nil
	case "List", "NodeHistoryList":
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := yaml.Unmarshal(data, &list); err != nil {
			return nil, fmt.Errorf("%s: not a valid list: %w", file, err)
		}
		var names []string
		for i, raw := range list.Items {
			h := &v1alpha1.NodeHistory{}
			if err := json.Unmarshal(raw, h); err != nil {
				return nil, fmt.Errorf("%s: item %d: not a valid NodeHistory: %w", file, i, err)
			}
			if h.Kind != "" && h.Kind != v1alpha1.NodeHistoryKind {
				return nil, fmt.Errorf("%s: item %d is a %s, not a NodeHistory", file, i, h.Kind)
			}
			if h.Name == node {
				return h, nil
			}
			names = append(names, h.Name)
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("%s holds no NodeHistory of node %q (the list is empty)", file, node)
		}
		return nil, fmt.Errorf("%s holds no NodeHistory of node %q (it holds those of: %s)", file, node, strings.Join(names, ", "))
	case "":
		return nil, fmt.Errorf("%s: no kind: want a NodeHistory (kubectl get nodehistory NODE -o yaml)", file)
	}
	return nil, fmt.Errorf("%s holds a %s, not a NodeHistory (kubectl get nodehistory NODE -o yaml)", file, head.Kind)
}
