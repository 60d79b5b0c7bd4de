package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/ndp-dev/ndp/apis/conditions"
	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldManager is the daemon's server-side apply field manager.
const FieldManager = "ndp-daemon"

// maxMessage bounds condition messages and annotations.
const maxMessage = 1024

// Status reports the node's progress: the node annotations (state,
// reason, currentConfig), its MachineConfigNode's conditions (server-side
// apply, field manager ndp-daemon) and Events on the Node.
type Status struct {
	Client   client.Client
	Reader   client.Reader
	Recorder events.EventRecorder
	NodeName string

	conds  []metav1.Condition
	loaded bool
	// lastEvent avoids repeating the same event at every poll; lastSpec
	// the same MachineConfigNode spec at every status change.
	lastEvent, lastSpec string
	// wrote holds the annotations this process last wrote ("": removed),
	// for Shows.
	wrote map[string]string
}

// Shows tells whether node (read from a cache) holds every annotation
// this process wrote since the last Seen: no decision is taken on a node
// from before the daemon's own last write (a drain given up, a grant
// used).
func (s *Status) Shows(node *corev1.Node) bool {
	for k, v := range s.wrote {
		if cur, ok := node.Annotations[k]; cur != v || (v == "" && ok) {
			return false
		}
	}
	return true
}

// Seen forgets the annotations written: a node read since holds them, or
// what another writer set after them.
func (s *Status) Seen() { s.wrote = nil }

// condition records one MachineConfigNode condition; lastTransitionTime
// only moves when its status does.
func (s *Status) condition(typ mcfgv1.StateProgress, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&s.conds, metav1.Condition{Type: string(typ), Status: status, Reason: reason, Message: conditions.Truncate(msg, maxMessage)})
}

// load reads the conditions the MachineConfigNode holds, once: a daemon
// restarted mid-update keeps those an earlier process set. A read that
// fails (other than NotFound: nothing to keep) leaves it unloaded, to be
// tried again; until then apply writes no conditions, which would replace
// the stored list with only what this process set. Conditions set before
// the read are newer than the stored ones and win.
func (s *Status) load(ctx context.Context) error {
	if s.loaded {
		return nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(mcfgv1.GroupVersion.WithKind("MachineConfigNode"))
	err := s.Reader.Get(ctx, client.ObjectKey{Name: s.NodeName}, u)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading MachineConfigNode %s: %w", s.NodeName, err)
	}
	var stored []metav1.Condition
	if err == nil {
		raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		b, _ := json.Marshal(raw)
		_ = json.Unmarshal(b, &stored) // the schema keeps them well formed
		// The spec an earlier process applied is not applied again
		// (a daemon starts again after every reboot).
		pool, _, _ := unstructured.NestedString(u.Object, "spec", "pool", "name")
		desired, _, _ := unstructured.NestedString(u.Object, "spec", "configVersion", "desired")
		if s.lastSpec == "" && pool != "" && desired != "" {
			s.lastSpec = specKey(pool, desired)
		}
	}
	for _, c := range s.conds {
		meta.SetStatusCondition(&stored, c)
	}
	s.conds, s.loaded = stored, true
	return nil
}

// specKey is what the MachineConfigNode's spec says, to skip an apply of
// the same.
func specKey(pool, desired string) string { return pool + "|" + desired }

// apply writes the MachineConfigNode: spec (node, pool, desired config)
// and status (current and desired config, conditions).
func (s *Status) apply(ctx context.Context, pool, current, desired string) error {
	if pool == "" {
		pool = "unknown"
	}
	if desired == "" {
		desired = current
	}
	if desired == "" {
		return nil // nothing to report against yet
	}
	if err := s.load(ctx); err != nil {
		return err // not from an empty list: retried
	}
	gvk := mcfgv1.GroupVersion.WithKind("MachineConfigNode")
	spec := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": s.NodeName},
		"spec": map[string]any{
			"node":          map[string]any{"name": s.NodeName},
			"pool":          map[string]any{"name": pool},
			"configVersion": map[string]any{"desired": desired},
		},
	}}
	spec.SetGroupVersionKind(gvk)
	if key := specKey(pool, desired); key != s.lastSpec {
		if err := s.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(spec), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying MachineConfigNode %s: %w", s.NodeName, err)
		}
		s.lastSpec = key
	}
	conds := make([]any, 0, len(s.conds))
	for _, c := range s.conds {
		if c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = metav1.Now()
		}
		conds = append(conds, map[string]any{"type": c.Type, "status": string(c.Status), "reason": c.Reason, "message": c.Message,
			"lastTransitionTime": c.LastTransitionTime.UTC().Format(time.RFC3339)})
	}
	version := map[string]any{"desired": desired}
	if current != "" {
		version["current"] = current
	}
	st := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": s.NodeName},
		"status":   map[string]any{"configVersion": version, "conditions": conds},
	}}
	st.SetGroupVersionKind(gvk)
	if err := s.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(st), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		if apierrors.IsNotFound(err) {
			s.lastSpec = "" // deleted meanwhile: the next write creates it again
		}
		return fmt.Errorf("applying the status of MachineConfigNode %s: %w", s.NodeName, err)
	}
	return nil
}

// NodeAnnotations are the annotations of its Node that ndp-daemon writes,
// and UsedAnnotations those of the rollout controller's it only removes
// once used: the admission policy ndp-daemon-node-fields
// (manifests/admission/daemon-own-node.yaml) allows these and no other,
// and test/cluster keeps the two lists equal.
var (
	NodeAnnotations = []string{
		ndpmcv1.CurrentConfigAnnotation, ndpmcv1.StateAnnotation, ndpmcv1.ReasonAnnotation,
		v1alpha1.UpdateDoneAnnotation, v1alpha1.DrainedPodsAnnotation,
		v1alpha1.RebootRequiredAnnotation, v1alpha1.RebootRequiredByAnnotation,
		v1alpha1.DrainSkippedAnnotation, v1alpha1.DrainSkippedReasonAnnotation,
	}
	UsedAnnotations = []string{v1alpha1.RebootGrantAnnotation, v1alpha1.DrainTimeoutAnnotation}
)

// annotate sets the daemon's node annotations, patching only what differs.
// A key outside NodeAnnotations (or UsedAnnotations, removed; or
// desiredConfig, set back to the currentConfig set with it: an update
// given up) is refused here, as the admission policy would refuse it on a
// cluster.
func (s *Status) annotate(ctx context.Context, node *corev1.Node, kv map[string]string) error {
	patch := map[string]any{}
	for k, v := range kv {
		sentBack := k == ndpmcv1.DesiredConfigAnnotation && v != "" && v == kv[ndpmcv1.CurrentConfigAnnotation]
		if !slices.Contains(NodeAnnotations, k) && !sentBack && (v != "" || !slices.Contains(UsedAnnotations, k)) {
			return fmt.Errorf("annotating node %s: %s is not among ndp-daemon's annotations (daemon.NodeAnnotations)", s.NodeName, k)
		}
		cur, ok := node.Annotations[k]
		if (v == "" && ok) || (v != "" && cur != v) {
			if v == "" {
				patch[k] = nil
			} else {
				patch[k] = v
			}
		}
	}
	if len(patch) == 0 {
		return nil
	}
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": patch}})
	if err := s.Client.Patch(ctx, node, client.RawPatch(types.MergePatchType, b)); err != nil {
		return fmt.Errorf("annotating node %s: %w", s.NodeName, err)
	}
	if s.wrote == nil {
		s.wrote = map[string]string{}
	}
	for k := range patch {
		s.wrote[k] = kv[k]
	}
	return nil
}

// podEvent records an Event on a pod, related to the node.
func (s *Status) podEvent(pod *corev1.Pod, node *corev1.Node, typ, reason, action, msg string) {
	if s.Recorder != nil {
		s.Recorder.Eventf(pod, node, typ, reason, action, "%s", conditions.Truncate(msg, maxMessage))
	}
}

// event records an Event on the Node, once per distinct message in a row.
func (s *Status) event(node *corev1.Node, typ, reason, action, msg string) {
	if s.Recorder == nil || reason+msg == s.lastEvent {
		return
	}
	s.lastEvent = reason + msg
	s.Recorder.Eventf(node, nil, typ, reason, action, "%s", conditions.Truncate(msg, maxMessage))
}
