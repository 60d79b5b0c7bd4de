//go:build scale

package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ndp-dev/ndp/daemon"
	"github.com/ndp-dev/ndp/internal/simhost"
	"github.com/ndp-dev/ndp/mco/mcoguard"
)

// fleet is every simulated node of the run: one Node informer shared by
// all (a thousand daemons each with a manager, a watch and a cache would
// measure the harness, not ndp), one work queue, and a bounded pool of
// workers that run each node's daemon.Sync on its Node's events — as the
// daemon's own controller does (daemon.SetupWithManager: every change of
// its Node runs Sync, and Sync's "look again after" is a requeue).
type fleet struct {
	cfg config
	// The daemons' clients: one shared HTTP client and rate limiter-free
	// rest config, each request counted.
	c       client.Client
	cs      kubernetes.Interface
	rec     events.EventRecorder
	harness kubernetes.Interface // the simulated kubelets and the informer
	// mco is the daemons' MCO guard (one watch for the fleet).
	mco mcoguard.Source

	nodes map[string]*simNode
	queue workqueue.TypedRateLimitingInterface[string]
	// nodeStore is the shared Node informer's: each daemon reads its Node
	// there, as ndp-daemon reads its manager's cache.
	nodeStore cache.Store

	mu         sync.Mutex
	syncErrors map[string]int // error text (shortened) → count
	syncs      int
}

// simNode is one node: its simulated machine and its daemon. A reboot
// replaces the daemon by a new one, as the process starts again after a
// boot.
type simNode struct {
	name, pool string
	m          *simhost.Machine
	host       *daemon.Host

	mu   sync.Mutex
	d    *daemon.Daemon
	down bool // rebooting: no daemon runs
	// rebootRequested is when the last reboot was asked for.
	rebootRequested time.Time
}

func (f *fleet) newDaemon(n *simNode) *daemon.Daemon {
	return &daemon.Daemon{
		NodeName: n.name,
		Client:   f.c,
		Reader:   f.c, // uncached, as the daemon's APIReader
		Nodes:    storeReader{f},
		MCO:      f.mco,
		Host:     n.host,
		Systemd:  n.m.Systemd,
		OS:       n.m.OS,
		Rebooter: n.m.Rebooter(func(string) { go f.reboot(n) }),
		Drainer: &daemon.Drainer{
			Client: f.cs, AttemptTimeout: 90 * time.Second, EvictRetryDelay: time.Second,
			RetryMin: time.Second, RetryMax: 10 * time.Second, Log: io.Discard,
		},
		Status:       &daemon.Status{Client: f.c, Reader: f.c, Recorder: f.rec, NodeName: n.name},
		BootIDPath:   n.m.BootIDPath(),
		PollInterval: f.cfg.poll,
		Log:          logr.Discard(),
	}
}

// storeReader reads Nodes from the fleet's informer (a copy, as a
// controller-runtime cache gives), anything else from the API server.
type storeReader struct{ f *fleet }

func (r storeReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	n, ok := obj.(*corev1.Node)
	if !ok || r.f.nodeStore == nil {
		return r.f.c.Get(ctx, key, obj, opts...)
	}
	item, exists, err := r.f.nodeStore.GetByKey(key.Name)
	if err != nil {
		return err
	}
	if !exists {
		return apierrors.NewNotFound(corev1.Resource("nodes"), key.Name)
	}
	item.(*corev1.Node).DeepCopyInto(n)
	return nil
}

func (r storeReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.f.c.List(ctx, list, opts...)
}

// addNode creates the simulated machine of a Node (its host root with the
// files given) and its daemon.
func (f *fleet) addNode(name, pool string, files map[string]string) error {
	m, err := simhost.NewMachine(filepath.Join(f.cfg.dir, name), name, f.cfg.restart, files)
	if err != nil {
		return err
	}
	h, err := daemon.OpenHost(m.Root(), simhost.UnitDir)
	if err != nil {
		return err
	}
	n := &simNode{name: name, pool: pool, m: m, host: h}
	n.d = f.newDaemon(n)
	f.mu.Lock()
	f.nodes[name] = n
	f.mu.Unlock()
	return nil
}

// reboot simulates the reboot a daemon asked for: the kubelet stops (the
// node goes NotReady), the machine is down for cfg.reboot, boots with a new
// boot ID, the kubelet reports Ready again and a new daemon starts and syncs.
func (f *fleet) reboot(n *simNode) {
	ctx := context.Background()
	n.mu.Lock() // held by the Sync that asked: taken once it returned
	n.down = true
	n.rebootRequested = time.Now()
	n.mu.Unlock()
	f.setReady(ctx, n.name, false)
	time.Sleep(f.cfg.reboot) // the simulated reboot's duration
	n.mu.Lock()
	if err := n.m.Boot(); err != nil {
		panic(err)
	}
	n.d = f.newDaemon(n)
	n.down = false
	n.mu.Unlock()
	f.setReady(ctx, n.name, true)
	f.queue.Add(n.name)
}

// setReady writes the node's Ready condition, as its kubelet does,
// retrying until it is written.
func (f *fleet) setReady(ctx context.Context, name string, ready bool) {
	st := corev1.ConditionFalse
	reason := "KubeletNotReady"
	if ready {
		st, reason = corev1.ConditionTrue, "KubeletReady"
	}
	now := metav1.Now()
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: st, Reason: reason, LastHeartbeatTime: now, LastTransitionTime: now,
	}}}})
	for ctx.Err() == nil {
		if _, err := f.harness.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond) // retry pacing, not a wait for a state
	}
}

// start runs the shared informer, the workers and the simulated kubelets'
// pod handling until ctx ends.
func (f *fleet) start(ctx context.Context, nodeInformer cache.SharedIndexInformer, pods informers.SharedInformerFactory) {
	f.nodeStore = nodeInformer.GetStore()
	enqueue := func(obj any) {
		if n, ok := obj.(*corev1.Node); ok {
			f.mu.Lock()
			_, ours := f.nodes[n.Name]
			f.mu.Unlock()
			if ours {
				f.queue.Add(n.Name)
			}
		}
	}
	_, _ = nodeInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(old, obj any) {
			// As the daemon's controller: a change of taints alone is not
			// its business.
			if o, ok := old.(*corev1.Node); ok {
				if n, ok := obj.(*corev1.Node); ok && daemon.TaintsOnly(o, n) {
					return
				}
			}
			enqueue(obj)
		},
	})
	// The kubelet's part of an eviction: a pod marked for deletion is gone
	// once its containers stopped (at once here).
	podInformer := pods.Core().V1().Pods().Informer()
	finalize := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.DeletionTimestamp == nil {
			return
		}
		go func() {
			zero := int64(0)
			_ = f.harness.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &p.UID}})
		}()
	}
	_, _ = podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: finalize, UpdateFunc: func(_, obj any) { finalize(obj) }})
	for i := 0; i < f.cfg.workers; i++ {
		go f.work(ctx)
	}
	go func() {
		<-ctx.Done()
		f.queue.ShutDown()
	}()
}

func (f *fleet) work(ctx context.Context) {
	for {
		name, shutdown := f.queue.Get()
		if shutdown {
			return
		}
		f.mu.Lock()
		n := f.nodes[name]
		f.mu.Unlock()
		after, err := n.sync(ctx)
		f.mu.Lock()
		f.syncs++
		if err != nil {
			msg := err.Error()
			if len(msg) > 160 {
				msg = msg[:160]
			}
			f.syncErrors[msg]++
		}
		f.mu.Unlock()
		switch {
		case err != nil:
			f.queue.AddRateLimited(name)
		case after > 0:
			f.queue.Forget(name)
			f.queue.AddAfter(name, after)
		default:
			f.queue.Forget(name)
		}
		f.queue.Done(name)
	}
}

func (n *simNode) sync(ctx context.Context) (time.Duration, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.down {
		return 0, nil // rebooting: the new daemon syncs once up
	}
	return n.d.Sync(ctx)
}

// journal reads the node's journal from its host root.
func (n *simNode) journal() (*daemon.Journal, error) {
	var j daemon.Journal
	found, err := n.host.ReadJSON(daemon.JournalPath, &j)
	if err != nil || !found {
		return nil, fmt.Errorf("%s: no journal (%v)", n.name, err)
	}
	return &j, nil
}

// errorSummary is the daemons' sync errors by text, most frequent first.
func (f *fleet) errorSummary() (int, map[string]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for k, v := range f.syncErrors {
		out[k] = v
	}
	return f.syncs, out
}
