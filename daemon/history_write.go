package daemon

import (
	"context"
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// historyTimeout bounds one write of the history: it is a record, not a
// gate, and must not hold an update up for long when the API server is slow.
const historyTimeout = 10 * time.Second

// historyRetry is when a settled daemon writes again a history entry whose
// write failed.
const historyRetry = 30 * time.Second

// history keeps the node's NodeHistory as last read or written, and the
// entries not written yet. A failed write is logged and retried at the next
// Sync; the journal on the host stays the source of truth.
type history struct {
	obj     *v1alpha1.NodeHistory
	pending []v1alpha1.NodeUpdate
	// recorded: this process has recorded the journal's update once (the
	// first Sync re-records it, in case a write was lost in a restart).
	recorded bool
}

// recordJournal records the journal's update in the history.
func (d *Daemon) recordJournal(ctx context.Context, node *corev1.Node, j *Journal) {
	d.history.recorded = true
	d.history.pending = mergeHistory(d.history.pending, historyEntry(j))
	d.flushHistory(ctx, node)
}

// recordRefusal records an update refused before anything ran.
func (d *Daemon) recordRefusal(ctx context.Context, node *corev1.Node, from, to, pool, msg string) {
	if to == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, historyTimeout)
	defer cancel()
	if err := d.loadHistory(ctx, node); err != nil {
		d.Log.Error(err, "reading the node's history (the refusal is recorded at the next attempt)")
		return
	}
	d.history.pending = mergeHistory(d.history.pending, refusalEntry(d.history.obj.Status.Updates, from, to, pool, msg, time.Now().UTC()))
	d.flushHistory(ctx, node)
}

// historyPending: entries wait for a write that failed.
func (d *Daemon) historyPending() bool { return len(d.history.pending) > 0 }

// loadHistory reads the NodeHistory once per process, creating it when
// missing: named after the node, owned by its Node (deleted with it; not a
// controller, nor blocking the Node's deletion).
func (d *Daemon) loadHistory(ctx context.Context, node *corev1.Node) error {
	if d.history.obj != nil {
		return nil
	}
	var nh v1alpha1.NodeHistory
	err := d.Reader.Get(ctx, client.ObjectKey{Name: d.NodeName}, &nh)
	if apierrors.IsNotFound(err) {
		nh = *v1alpha1.NewNodeHistory(node.Name, node.UID)
		err = d.Client.Create(ctx, &nh)
		if apierrors.IsAlreadyExists(err) {
			err = d.Reader.Get(ctx, client.ObjectKey{Name: d.NodeName}, &nh)
		}
	}
	if err != nil {
		return err
	}
	d.history.obj = &nh
	return nil
}

// flushHistory writes the pending entries: one status update, none when
// they change nothing. On failure they stay pending.
func (d *Daemon) flushHistory(ctx context.Context, node *corev1.Node) {
	if len(d.history.pending) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, historyTimeout)
	defer cancel()
	if err := d.loadHistory(ctx, node); err != nil {
		d.Log.Error(err, "reading the node's history (retried at the next sync)")
		return
	}
	updates := mergeHistory(d.history.obj.Status.Updates, d.history.pending...)
	if equality.Semantic.DeepEqual(updates, d.history.obj.Status.Updates) {
		d.history.pending = nil
		return
	}
	nh := d.history.obj.DeepCopy()
	nh.Status.Updates = updates
	if err := d.Client.Status().Update(ctx, nh); err != nil {
		d.Log.Error(err, "writing the node's history (retried at the next sync)")
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			d.history.obj = nil // read again (or create) before the next write
		}
		return
	}
	d.history.obj, d.history.pending = nh, nil
}

// sourcesOf reads a rendered config's ndp.dev/sources annotation; one that
// cannot be read gives no sources (the history then names no MachineConfig:
// it is no reason to refuse an update).
func sourcesOf(mc *ndpmcv1.MachineConfig) map[string]string {
	raw := mc.Annotations[ndpmcv1.SourcesAnnotation]
	if raw == "" {
		return nil
	}
	var m map[string]string
	if json.Unmarshal([]byte(raw), &m) != nil {
		return nil
	}
	return m
}
