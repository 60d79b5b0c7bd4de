package mcoguard

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// Source tells what is known of the MCO's objects. A *Guard answers from
// its watches; Lookup with a GET of each.
type Source interface {
	Observe(ctx context.Context, node *corev1.Node) (Observed, error)
}

// Lookup observes with a GET of each object at every call (Observe). For
// one-off checks and tests; anything that asks at every sync uses a Guard.
type Lookup struct{ Reader client.Reader }

// Observe is Observe(ctx, l.Reader, node).
func (l Lookup) Observe(ctx context.Context, node *corev1.Node) (Observed, error) {
	return Observe(ctx, l.Reader, node)
}

// Guard keeps what the API server says of the MCO's two objects from a
// watch of each, scoped to that one object by a field selector (nothing
// else is listed or cached, and RBAC may name the object). Observe answers
// from memory: no request per question. A cluster that does not serve the
// ClusterOperator kind (plain Kubernetes) has no ClusterOperator; the
// Guard lists again every NotServedRecheck in case the kind appears.
//
// Run it (Start; it is a manager Runnable) before asking; until both
// objects were listed once, Observe fails (a guess is never an answer).
// Subscribe gives a channel that hears every change of presence (and the
// first sync), for what the Guard gates to look again.
type Guard struct {
	c client.WithWatch
	// NotServedRecheck is how often a kind the API server does not serve
	// is listed again (5 minutes when zero).
	NotServedRecheck time.Duration
	// Backoff bounds the pause after a failed list or watch (30 s when
	// zero; it starts at a second).
	Backoff time.Duration

	mu     sync.Mutex
	co, ds *bool
	// nodeSelector is the DaemonSet's pod template's.
	nodeSelector map[string]string
	lastErr      error
	subs         []chan event.GenericEvent
}

// NewGuard makes a Guard that watches with c, whose scheme must know
// appsv1 (the DaemonSet) and metav1 (the ClusterOperator is watched as
// metadata only).
func NewGuard(c client.WithWatch) *Guard { return &Guard{c: c} }

// Start watches both objects until ctx ends.
func (g *Guard) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); g.run(ctx, coKind{}) }()
	go func() { defer wg.Done(); g.run(ctx, dsKind{}) }()
	wg.Wait()
	return nil
}

// NeedLeaderElection: every replica, and every daemon, needs its own view.
func (g *Guard) NeedLeaderElection() bool { return false }

// Subscribe returns a channel that gets an event (a ClusterOperator named
// machine-config; only its name means anything) whenever the presence of
// either object or the DaemonSet's nodeSelector changes, and when the
// Guard first knows both. Events coalesce: one pending at most.
func (g *Guard) Subscribe() <-chan event.GenericEvent {
	ch := make(chan event.GenericEvent, 1)
	g.mu.Lock()
	g.subs = append(g.subs, ch)
	g.mu.Unlock()
	return ch
}

// Synced tells whether both objects were listed once.
func (g *Guard) Synced() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.co != nil && g.ds != nil
}

// WaitSynced waits until Synced or ctx ends; then it returns the last
// error of the lists, if any, with ctx's.
func (g *Guard) WaitSynced(ctx context.Context) error {
	for !g.Synced() {
		select {
		case <-ctx.Done():
			g.mu.Lock()
			last := g.lastErr
			g.mu.Unlock()
			return errors.Join(fmt.Errorf("waiting for the first list of the Machine Config Operator's objects: %w", ctx.Err()), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// Observe tells what the watches know; with node, whether the DaemonSet's
// nodeSelector excludes it (as Observe does). Before the first list of
// both objects it fails, naming the last error.
func (g *Guard) Observe(_ context.Context, node *corev1.Node) (Observed, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.co == nil || g.ds == nil {
		if g.lastErr != nil {
			return Observed{}, fmt.Errorf("the Machine Config Operator's objects are not known yet: %w", g.lastErr)
		}
		return Observed{}, errors.New("the Machine Config Operator's objects are not known yet (the first list has not answered)")
	}
	o := Observed{ClusterOperator: *g.co, DaemonSet: *g.ds}
	if o.DaemonSet && node != nil {
		o.DaemonSetSkipsNode = !labels.SelectorFromSet(g.nodeSelector).Matches(labels.Set(node.Labels))
	}
	return o, nil
}

// Verdict is Decide of what the watches know of the cluster (no node).
func (g *Guard) Verdict() (Verdict, error) {
	o, err := g.Observe(context.Background(), nil)
	if err != nil {
		return Verdict{}, err
	}
	return Decide(o), nil
}

// set records one object's presence (and the DaemonSet's nodeSelector)
// and tells the subscribers if anything changed.
func (g *Guard) set(k kind, present bool, nodeSelector map[string]string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lastErr = nil
	p := &g.co
	if _, ds := k.(dsKind); ds {
		p = &g.ds
	}
	wasSynced := g.co != nil && g.ds != nil
	changed := *p == nil || **p != present
	*p = &present
	if _, ds := k.(dsKind); ds {
		if !present {
			nodeSelector = nil
		}
		if !maps.Equal(g.nodeSelector, nodeSelector) {
			changed = changed || present
			g.nodeSelector = nodeSelector
		}
	}
	synced := g.co != nil && g.ds != nil
	if !synced || (wasSynced && !changed) {
		return
	}
	ev := event.GenericEvent{Object: &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: ClusterOperatorName}}}
	for _, ch := range g.subs {
		select {
		case ch <- ev:
		default: // one is pending already: it says the same
		}
	}
}

func (g *Guard) failed(err error) {
	g.mu.Lock()
	g.lastErr = err
	g.mu.Unlock()
}

// run lists and watches one object until ctx ends: a list, then a watch
// from the list's resourceVersion, watched again from the last one seen
// when the server ends it, listed again when the watch fails.
func (g *Guard) run(ctx context.Context, k kind) {
	backoff := time.Second
	pause := func(d time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	for ctx.Err() == nil {
		present, sel, rv, err := k.list(ctx, g.c)
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			// The kind is not served: the object cannot exist.
			g.set(k, false, nil)
			if !pause(g.recheck()) {
				return
			}
			continue
		}
		if err != nil {
			g.failed(fmt.Errorf("listing %s: %w", k, err))
			if !pause(backoff) {
				return
			}
			backoff = min(2*backoff, g.maxBackoff())
			continue
		}
		g.set(k, present, sel)
		backoff = time.Second
		for ctx.Err() == nil {
			w, err := k.watch(ctx, g.c, rv)
			if err != nil {
				g.failed(fmt.Errorf("watching %s: %w", k, err))
				break
			}
			next, relist := g.drain(k, w, rv)
			w.Stop()
			if relist {
				break
			}
			rv = next
		}
		if ctx.Err() == nil && !pause(backoff) {
			return
		}
	}
}

// drain applies a watch's events until it ends; it returns the last
// resourceVersion seen and whether to list again (the watch failed, e.g.
// its resourceVersion is too old).
func (g *Guard) drain(k kind, w watch.Interface, rv string) (string, bool) {
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Error:
			g.failed(fmt.Errorf("watching %s: %w", k, apierrors.FromObject(ev.Object)))
			return rv, true
		case watch.Bookmark:
		case watch.Added, watch.Modified:
			g.set(k, true, k.nodeSelector(ev.Object))
		case watch.Deleted:
			g.set(k, false, nil)
		}
		if o, ok := ev.Object.(client.Object); ok && o.GetResourceVersion() != "" {
			rv = o.GetResourceVersion()
		}
	}
	return rv, false
}

func (g *Guard) recheck() time.Duration {
	if g.NotServedRecheck > 0 {
		return g.NotServedRecheck
	}
	return 5 * time.Minute
}

func (g *Guard) maxBackoff() time.Duration {
	if g.Backoff > 0 {
		return g.Backoff
	}
	return 30 * time.Second
}

// kind is one of the two objects: how to list and watch it, by name.
type kind interface {
	fmt.Stringer
	list(ctx context.Context, c client.WithWatch) (present bool, nodeSelector map[string]string, rv string, err error)
	watch(ctx context.Context, c client.WithWatch, rv string) (watch.Interface, error)
	nodeSelector(obj any) map[string]string
}

// watchOptions are a watch's from rv, with bookmarks (they keep rv recent,
// so that a watch the server ends resumes without a list).
func watchOptions(rv string, opts ...client.ListOption) []client.ListOption {
	return append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
}

// coKind is the ClusterOperator, as metadata (its status changes often
// and says nothing here).
type coKind struct{}

func (coKind) String() string { return "ClusterOperator " + ClusterOperatorName }

var coSelector = client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", ClusterOperatorName)}

func coList() *metav1.PartialObjectMetadataList {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(configv1.GroupVersion.WithKind("ClusterOperatorList"))
	return l
}

func (coKind) list(ctx context.Context, c client.WithWatch) (bool, map[string]string, string, error) {
	l := coList()
	if err := c.List(ctx, l, coSelector); err != nil {
		return false, nil, "", err
	}
	return len(l.Items) > 0, nil, l.ResourceVersion, nil
}

func (coKind) watch(ctx context.Context, c client.WithWatch, rv string) (watch.Interface, error) {
	return c.Watch(ctx, coList(), watchOptions(rv, coSelector)...)
}

func (coKind) nodeSelector(any) map[string]string { return nil }

// dsKind is the MCO daemon's DaemonSet: its nodeSelector tells which nodes
// its daemon runs on.
type dsKind struct{}

func (dsKind) String() string { return "DaemonSet " + DaemonSetNamespace + "/" + DaemonSetName }

var dsSelector = []client.ListOption{client.InNamespace(DaemonSetNamespace),
	client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", DaemonSetName)}}

func (dsKind) list(ctx context.Context, c client.WithWatch) (bool, map[string]string, string, error) {
	var l appsv1.DaemonSetList
	if err := c.List(ctx, &l, dsSelector...); err != nil {
		return false, nil, "", err
	}
	if len(l.Items) == 0 {
		return false, nil, l.ResourceVersion, nil
	}
	return true, l.Items[0].Spec.Template.Spec.NodeSelector, l.ResourceVersion, nil
}

func (dsKind) watch(ctx context.Context, c client.WithWatch, rv string) (watch.Interface, error) {
	return c.Watch(ctx, &appsv1.DaemonSetList{}, watchOptions(rv, dsSelector...)...)
}

func (dsKind) nodeSelector(obj any) map[string]string {
	if ds, ok := obj.(*appsv1.DaemonSet); ok {
		return ds.Spec.Template.Spec.NodeSelector
	}
	return nil
}

// NewGuardForConfig makes a Guard with a client of its own for cfg (the
// guard's watches are not the manager's cache: they are scoped to the two
// objects, and one of them may not be served). Its REST mapping is fixed:
// no discovery request at a daemon's start, and a kind not served is the
// API server's 404.
func NewGuardForConfig(cfg *rest.Config) (*Guard, error) {
	s := runtime.NewScheme()
	if err := appsv1.AddToScheme(s); err != nil {
		return nil, err
	}
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(appsv1.SchemeGroupVersion.WithKind("DaemonSet"), meta.RESTScopeNamespace)
	m.Add(configv1.GroupVersion.WithKind("ClusterOperator"), meta.RESTScopeRoot)
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: s, Mapper: m})
	if err != nil {
		return nil, fmt.Errorf("a client for the Machine Config Operator guard: %w", err)
	}
	return NewGuard(c), nil
}
