// Package mcoguard tells whether the Machine Config Operator manages the
// cluster's nodes. ndp replaces the MCO's render, node and daemon roles,
// and both write the same objects (rendered configs, the pools' targets,
// 99-<pool>-generated-registries, the node annotations currentConfig,
// desiredConfig and state): where the MCO is present, ndp's render,
// registries and rollout controllers and its daemon must stand down.
// Decide is the decision, from what a Guard (watches) or Observe (GETs)
// found; what standing down means is each of theirs.
package mcoguard

import (
	"context"
	"fmt"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The MCO's objects that tell it is there: its ClusterOperator, which the
// cluster version operator creates and the MCO keeps, and the DaemonSet of
// its node daemon, which writes the node annotations.
const (
	ClusterOperatorName = "machine-config"
	DaemonSetNamespace  = "openshift-machine-config-operator"
	DaemonSetName       = "machine-config-daemon"
)

// Reason is the reason of the pool condition and of the events that say
// ndp stands down.
const Reason = "MachineConfigOperatorPresent"

// Observed is what the lookups found.
type Observed struct {
	// ClusterOperator: the ClusterOperator machine-config exists.
	ClusterOperator bool
	// DaemonSet: the DaemonSet
	// openshift-machine-config-operator/machine-config-daemon exists.
	DaemonSet bool
	// DaemonSetSkipsNode: the DaemonSet's nodeSelector excludes the node
	// asked about, so that the MCO's daemon runs no pod there. Only known
	// for a node (Observe with one); false when not known.
	DaemonSetSkipsNode bool
}

// Verdict is what ndp must do.
type Verdict struct {
	// StandDown: the MCO manages the nodes (this node, when one was
	// asked about); ndp must not write to them.
	StandDown bool
	// Found names the MCO's objects present, e.g. "ClusterOperator
	// machine-config".
	Found []string
	// Message says why ndp stands down, naming what was found, for a
	// condition or an event; "" when it need not.
	Message string
}

// Decide tells whether ndp must stand down. The ClusterOperator alone is
// enough: the MCO manages the cluster even while its daemon's DaemonSet is
// being replaced. The DaemonSet alone is enough too, unless it skips the
// node asked about (its daemon never writes that node's annotations).
func Decide(o Observed) Verdict {
	var v Verdict
	if o.ClusterOperator {
		v.Found = append(v.Found, "ClusterOperator "+ClusterOperatorName)
	}
	if o.DaemonSet {
		v.Found = append(v.Found, "DaemonSet "+DaemonSetNamespace+"/"+DaemonSetName)
	}
	v.StandDown = o.ClusterOperator || (o.DaemonSet && !o.DaemonSetSkipsNode)
	if v.StandDown {
		v.Message = fmt.Sprintf("the Machine Config Operator manages this cluster (%s): ndp stands down (it renders no configuration and writes no node); remove one of the two",
			strings.Join(v.Found, ", "))
	}
	return v
}

// Observe looks up the MCO's objects with r: a cache reader or the API
// server. Absent means not found, or a kind the API server does not serve
// (a plain Kubernetes cluster has no ClusterOperator CRD); any other error
// is returned, and the caller must not act on a guess. With node, it also
// tells whether the DaemonSet's nodeSelector excludes that node; its node
// affinity and tolerations are not evaluated (the MCO's daemon has none
// that exclude a node), so a DaemonSet is taken to run wherever its
// nodeSelector lets it.
func Observe(ctx context.Context, r client.Reader, node *corev1.Node) (Observed, error) {
	var o Observed
	var co configv1.ClusterOperator
	found, err := present(r.Get(ctx, client.ObjectKey{Name: ClusterOperatorName}, &co))
	if err != nil {
		return o, fmt.Errorf("reading ClusterOperator %s: %w", ClusterOperatorName, err)
	}
	o.ClusterOperator = found
	var ds appsv1.DaemonSet
	found, err = present(r.Get(ctx, client.ObjectKey{Namespace: DaemonSetNamespace, Name: DaemonSetName}, &ds))
	if err != nil {
		return o, fmt.Errorf("reading DaemonSet %s/%s: %w", DaemonSetNamespace, DaemonSetName, err)
	}
	o.DaemonSet = found
	if found && node != nil {
		o.DaemonSetSkipsNode = !labels.SelectorFromSet(ds.Spec.Template.Spec.NodeSelector).Matches(labels.Set(node.Labels))
	}
	return o, nil
}

// present reads a Get's error: found, absent, or an error to return.
func present(err error) (bool, error) {
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		return false, nil
	}
	return false, err
}
