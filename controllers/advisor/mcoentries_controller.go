package advisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/mco/mcoentries"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/policyset"
	"github.com/ndp-dev/ndp/render"
)

// MCOEntries modes (ndp-controller --mco-entries).
const (
	MCOEntriesOff       = "off"
	MCOEntriesStatic    = "static"
	MCOEntriesPerUpdate = "all"
)

// The entries' report on each NodeDisruptionPolicy's status.mco (a status
// patch). Its patch of MachineConfiguration cluster is granted by the
// opt-in overlays/openshift-mco-entries alone.
// +kubebuilder:rbac:groups=ndp.dev,resources=nodedisruptionpolicies/status,verbs=get;update;patch

// MCOEntriesReconciler keeps ndp's entries in the Machine Config Operator's
// node disruption policy, MachineConfiguration cluster's
// spec.nodeDisruptionPolicy (docs/openshift.md#ndps-policies-in-the-mco):
// the static entries of the active policies and, with PerUpdate, the
// per-update entries of the pending updates, under its own field manager,
// never forced. It reports on each NodeDisruptionPolicy's status.mco what
// of it the MCO is given and why not the rest. Its decisions are
// mcoentries'; this only reads, applies and reports.
type MCOEntriesReconciler struct {
	Client client.Client
	// APIReader reads MachineConfiguration cluster with its managedFields
	// (the cache strips them) and the KubeletConfigs at the moment of a
	// per-update write.
	APIReader client.Reader
	Active    *policyset.ActivePolicies
	// Forecasts computes each pool's pending moves (its input); used with
	// PerUpdate.
	Forecasts *ForecastReconciler
	PerUpdate bool
	Recorder  events.EventRecorder

	mu    sync.Mutex
	noted map[string]bool
	// waiting is the deleted policy last seen still in the active set.
	waiting string
}

// mcoEntriesKey is the one request: everything is decided at once.
var mcoEntriesKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: mcoentries.MachineConfigurationName}}

// SetupWithManager reconciles on anything the entries depend on.
func (r *MCOEntriesReconciler) SetupWithManager(mgr ctrl.Manager) error {
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{mcoEntriesKey}
	})
	b := ctrl.NewControllerManagedBy(mgr).
		Named("mcoentries").
		Watches(&operatorv1.MachineConfiguration{}, one).
		// The policy controller writes a policy's status after it changes
		// the active set: that write brings this one the new set.
		Watches(&v1alpha1.NodeDisruptionPolicy{}, one, builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool { return policyRevisionChanged(e.ObjectOld, e.ObjectNew) },
		}))
	if r.PerUpdate {
		b = b.Watches(&mcfgv1.MachineConfigPool{}, one).
			Watches(&ndpmcv1.MachineConfig{}, one).
			Watches(&corev1.Node{}, one, builder.WithPredicates(nodeConfigChanged)).
			Watches(&mcfgv1.KubeletConfig{}, one).
			Watches(&mcfgv1.ContainerRuntimeConfig{}, one)
	}
	return b.Complete(r)
}

// policyRevisionChanged passes a policy's updates that can change the
// active set (its generation, its active revision), not this
// controller's own status.mco writes.
func policyRevisionChanged(o, n client.Object) bool {
	a, okA := o.(*v1alpha1.NodeDisruptionPolicy)
	b, okB := n.(*v1alpha1.NodeDisruptionPolicy)
	return !okA || !okB || a.Generation != b.Generation || a.Status.Revision != b.Status.Revision || a.Status.ObservedGeneration != b.Status.ObservedGeneration
}

// Reconcile computes ndp's entries and applies them.
func (r *MCOEntriesReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	live, err := mcoentries.ReadLive(ctx, r.APIReader)
	if err != nil || live == nil {
		// None: the MCO's operator creates it; ndp never does.
		return reconcile.Result{}, err
	}
	mc, own, spec, admin := live.MC, live.Own, live.Spec, live.Admin

	pl, err := r.Active.Ready(ctx, r.Client)
	var notReady *policyset.NotReadyError
	switch {
	case errors.As(err, &notReady) || (err == nil && pl == nil):
		return reconcile.Result{RequeueAfter: 2 * time.Second}, nil
	case err != nil:
		return reconcile.Result{}, err
	}
	pols := r.Active.Others("")
	// The policy controller takes a deleted policy out of the set after
	// this controller saw it go, and tells it nothing then (it has no
	// status left to write): look again shortly, rather than keep the
	// deleted policy's entries until some other event.
	gone, err := deletedButActive(ctx, r.Client, pols)
	if err != nil {
		return reconcile.Result{}, err
	}
	var done reconcile.Result
	if gone != "" {
		done.RequeueAfter = time.Second
	}
	r.noteWaiting(ctx, gone)
	st, err := mcoentries.Static(ctx, mcoentries.StaticInput{Planner: pl, Policies: pols, Base: admin})
	if err != nil {
		return reconcile.Result{}, err
	}
	static, conflicts := mcoentries.Conflicts(st.Entries, spec, own)
	static, limited := mcoentries.WithinLimits(admin, static)

	var perUpdate mcoentries.Entries
	var notes []mcoentries.Unexpressed
	var targets map[string]string
	var deciders map[string][]string
	if r.PerUpdate {
		if perUpdate, notes, targets, deciders, err = r.pending(ctx, pl, mcoentries.Merge(admin, static)); err != nil {
			return reconcile.Result{}, err
		}
		var c []mcoentries.Conflict
		perUpdate, c = mcoentries.Conflicts(perUpdate, spec, own)
		conflicts = append(conflicts, c...)
		var dropped []mcoentries.Unexpressed
		perUpdate, dropped = mcoentries.WithinLimits(mcoentries.Merge(admin, static), perUpdate)
		notes = append(notes, dropped...)
	}
	want := mcoentries.Merge(static, perUpdate)
	guarded := mcoentries.Subjects(perUpdate)
	mine := live.Mine()

	if newer := addedOrChanged(perUpdate, mine); len(newer) > 0 {
		// Lock first: the guard refuses other changes to these paths from
		// now on; then make sure nothing changed them before it stood.
		lock := union(mcoentries.Guarded(mc), guarded)
		if err := r.apply(ctx, mine, lock); err != nil {
			return reconcile.Result{}, err
		}
		if why, err := r.moved(ctx, targets); err != nil || why != "" {
			if err == nil {
				logger.Info("not writing per-update entries yet", "reason", why)
			}
			return reconcile.Result{RequeueAfter: time.Second}, err
		}
	}
	if len(addedOrChanged(want, mine)) > 0 || len(addedOrChanged(mine, want)) > 0 || !slices.Equal(mcoentries.Guarded(mc), guarded) {
		err = r.apply(ctx, want, guarded)
	}
	if held := mcoentries.ApplyConflicts(err); len(held) > 0 {
		// Written by another manager between the read and the apply.
		for _, s := range held {
			conflicts = append(conflicts, mcoentries.Conflict{Subject: s, Managers: []string{"another manager"}})
		}
		want = mcoentries.Without(want, held)
		err = r.apply(ctx, want, without(guarded, held))
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.report(ctx, pols, st, static, perUpdate, deciders, conflicts, append(limited, notes...)); err != nil {
		return reconcile.Result{}, err
	}
	return done, nil
}

// noteWaiting logs, once each time, that a deleted policy is still in the
// active set ("": none is).
func (r *MCOEntriesReconciler) noteWaiting(ctx context.Context, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waiting != name {
		r.waiting = name
		if name == "" {
			return
		}
		log.FromContext(ctx).Info("a deleted NodeDisruptionPolicy is still in the active set: looking again until it leaves", "policy", name)
	}
}

// deletedButActive names a policy of the active set whose
// NodeDisruptionPolicy is deleted (gone from c, the cache, or being
// deleted), "" when there is none.
func deletedButActive(ctx context.Context, c client.Reader, pols []policy.Policy) (string, error) {
	var list v1alpha1.NodeDisruptionPolicyList
	if err := c.List(ctx, &list); err != nil {
		return "", fmt.Errorf("listing NodeDisruptionPolicies: %w", err)
	}
	live := map[string]bool{}
	for _, p := range list.Items {
		if p.DeletionTimestamp.IsZero() {
			live[p.Name] = true
		}
	}
	for _, p := range pols {
		if p.Name != "" && !live[p.Name] {
			return p.Name, nil
		}
	}
	return "", nil
}

// apply writes ndp's part of MachineConfiguration cluster: what it does not
// send, ndp no longer owns and the API server removes.
func (r *MCOEntriesReconciler) apply(ctx context.Context, e mcoentries.Entries, guarded []string) error {
	u, err := mcoentries.ApplyObject(e, guarded)
	if err != nil {
		return err
	}
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(mcoentries.FieldManager)); err != nil {
		return fmt.Errorf("applying ndp's entries to MachineConfiguration %s: %w", mcoentries.MachineConfigurationName, err)
	}
	return nil
}

// pending computes the per-update entries of every pool's pending moves,
// the target each pool was found moving to, and, for each subject
// ("file:/etc/x", "unit:y.service", "sshkey"), the policies whose claims
// decided its change in some move's plan.
func (r *MCOEntriesReconciler) pending(ctx context.Context, pl *planner.Planner, base mcoentries.Entries) (mcoentries.Entries, []mcoentries.Unexpressed, map[string]string, map[string][]string, error) {
	var pools mcfgv1.MachineConfigPoolList
	if err := r.Client.List(ctx, &pools); err != nil {
		return mcoentries.Entries{}, nil, nil, nil, fmt.Errorf("listing MachineConfigPools: %w", err)
	}
	targets := map[string]string{}
	var moves []mcoentries.Move
	for i := range pools.Items {
		pool := &pools.Items[i]
		in, err := r.Forecasts.input(ctx, pool)
		var selErr *render.SelectorError
		if errors.As(err, &selErr) {
			continue
		}
		if err != nil {
			return mcoentries.Entries{}, nil, nil, nil, err
		}
		targets[pool.Name] = in.Target
		to := in.Configs[in.Target]
		if in.Predicted != nil && in.Predicted.Name == in.Target {
			to = in.Predicted
		}
		if to == nil {
			continue
		}
		froms := map[string]bool{}
		for _, n := range in.Nodes {
			if n.Current != "" && n.Current != in.Target {
				froms[n.Current] = true
			}
		}
		for _, name := range sortedSet(froms) {
			from := in.Configs[name]
			if from == nil {
				continue
			}
			req := planner.Request{From: from, To: to, Pool: pool.Name, PoolLabels: pool.Labels, SingleNode: in.SingleNode}
			plan, err := pl.Plan(ctx, req)
			if err != nil {
				return mcoentries.Entries{}, nil, nil, nil, fmt.Errorf("planning %s -> %s for pool %s: %w", from.Name, to.Name, pool.Name, err)
			}
			moves = append(moves, mcoentries.Move{Pool: pool.Name, Update: mcoentries.Update{From: from, To: to, Plan: plan, SingleNode: in.SingleNode, Overrides: in.Overrides}, Sources: to.Sources})
		}
	}
	if len(moves) == 0 {
		return mcoentries.Entries{}, nil, targets, nil, nil
	}
	guardedSource, err := r.guardedSources(ctx)
	if err != nil {
		return mcoentries.Entries{}, nil, nil, nil, err
	}
	e, notes, err := mcoentries.ForPending(moves, base, guardedSource)
	return e, notes, targets, decidersOf(moves), err
}

// decidersOf names, for each subject of the moves' changes, the policies
// whose claims won it in their plans (the password hash's go with the
// SSH keys: the MCO's sshkey entry covers both).
func decidersOf(moves []mcoentries.Move) map[string][]string {
	out := map[string][]string{}
	for _, m := range moves {
		for _, reason := range m.Plan.Reasons {
			subject := reason.ChangeID
			if subject == "password" {
				subject = "sshkey"
			}
			if reason.Policy != planner.NoPolicy && !slices.Contains(out[subject], reason.Policy) {
				out[subject] = append(out[subject], reason.Policy)
			}
		}
	}
	return out
}

// guardedSources tells which MachineConfigs the admission guard covers:
// those an administrator writes (no generated-by-controller annotation)
// and those the MCO generates from a KubeletConfig or a
// ContainerRuntimeConfig (99-<pool>-generated-kubelet[-N],
// 99-<pool>-generated-containerruntime[-N]); not the MCO's templates nor
// its image-mirror rendering, which come from objects no guard refuses.
func (r *MCOEntriesReconciler) guardedSources(ctx context.Context) (func(string) bool, error) {
	var mcs ndpmcv1.MachineConfigList
	if err := r.Client.List(ctx, &mcs); err != nil {
		return nil, fmt.Errorf("listing MachineConfigs: %w", err)
	}
	byName := map[string]map[string]string{}
	for _, mc := range mcs.Items {
		byName[mc.Name] = mc.Annotations
	}
	return func(name string) bool {
		ann, ok := byName[name]
		switch {
		case !ok:
			return false
		case ann[ndpmcv1.GeneratedByControllerVersionAnnotation] == "":
			return true
		}
		return generatedFromGuardedKind(name)
	}, nil
}

// generatedFromGuardedKind: 99-<pool>-generated-kubelet[-N] and
// 99-<pool>-generated-containerruntime[-N], the MCO's names for what its
// kubelet-config and container-runtime-config controllers generate.
func generatedFromGuardedKind(name string) bool {
	if !strings.HasPrefix(name, "99-") {
		return false
	}
	for _, kind := range []string{"-generated-kubelet", "-generated-containerruntime"} {
		if i := strings.LastIndex(name, kind); i > 3 {
			rest := name[i+len(kind):]
			if rest == "" || (strings.HasPrefix(rest, "-") && strings.Trim(rest[1:], "0123456789") == "" && len(rest) > 1) {
				return true
			}
		}
	}
	return false
}

// moved says why the per-update entries cannot be written yet, once the
// guard stands: a pool's target is no longer the one they were computed
// for, or a KubeletConfig or ContainerRuntimeConfig changed before the
// guard stood and the MCO has not rendered it yet (its generated
// MachineConfig would then change a guarded path without the guard).
func (r *MCOEntriesReconciler) moved(ctx context.Context, targets map[string]string) (string, error) {
	var kcs mcfgv1.KubeletConfigList
	if err := r.APIReader.List(ctx, &kcs); err != nil && !meta.IsNoMatchError(err) {
		return "", fmt.Errorf("listing KubeletConfigs: %w", err)
	}
	for _, kc := range kcs.Items {
		if kc.Status.ObservedGeneration < kc.Generation {
			return fmt.Sprintf("KubeletConfig %s (generation %d) is not rendered by the MCO yet", kc.Name, kc.Generation), nil
		}
	}
	var crcs mcfgv1.ContainerRuntimeConfigList
	if err := r.APIReader.List(ctx, &crcs); err != nil && !meta.IsNoMatchError(err) {
		return "", fmt.Errorf("listing ContainerRuntimeConfigs: %w", err)
	}
	for _, c := range crcs.Items {
		if c.Status.ObservedGeneration < c.Generation {
			return fmt.Sprintf("ContainerRuntimeConfig %s (generation %d) is not rendered by the MCO yet", c.Name, c.Generation), nil
		}
	}
	var pools mcfgv1.MachineConfigPoolList
	if err := r.Client.List(ctx, &pools); err != nil {
		return "", err
	}
	for i := range pools.Items {
		in, err := r.Forecasts.input(ctx, &pools.Items[i])
		if err != nil {
			continue
		}
		if want, ok := targets[pools.Items[i].Name]; ok && in.Target != want {
			return fmt.Sprintf("pool %s now goes to %s, not %s", pools.Items[i].Name, in.Target, want), nil
		}
	}
	return "", nil
}

// report writes each active policy's status.mco: its per-update entries
// are those of the changes it decided (deciders).
func (r *MCOEntriesReconciler) report(ctx context.Context, pols []policy.Policy, st *mcoentries.StaticResult, static, perUpdate mcoentries.Entries, deciders map[string][]string, conflicts []mcoentries.Conflict, notes []mcoentries.Unexpressed) error {
	conflictOf := map[string]mcoentries.Conflict{}
	for _, c := range conflicts {
		conflictOf[c.Subject] = c
	}
	for _, p := range pols {
		if p.Name == "" {
			continue
		}
		var notMine []string
		for _, subject := range mcoentries.Subjects(perUpdate) {
			if !slices.Contains(deciders[subject], p.Name) {
				notMine = append(notMine, subject)
			}
		}
		s := policyMCOStatus(p, st, static, conflictOf, mcoentries.Without(perUpdate, notMine))
		var ndp v1alpha1.NodeDisruptionPolicy
		if err := r.Client.Get(ctx, client.ObjectKey{Name: p.Name}, &ndp); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return err
		}
		if ndp.Status.MCO != nil && equalMCOStatus(*ndp.Status.MCO, s) {
			continue
		}
		patch, err := json.Marshal([]map[string]any{{"op": "add", "path": "/status/mco", "value": s}})
		if err != nil {
			return err
		}
		if err := r.Client.Status().Patch(ctx, &ndp, client.RawPatch(types.JSONPatchType, patch)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("writing the status of NodeDisruptionPolicy %s: %w", p.Name, err)
		}
	}
	r.noteMoves(ctx, notes)
	return nil
}

// noteMoves records, once each, why a pending update gets no per-update
// entries: a Warning Event on its UpdateForecast (ndp's own object).
func (r *MCOEntriesReconciler) noteMoves(ctx context.Context, notes []mcoentries.Unexpressed) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	for _, n := range notes {
		k := n.Subject + "\x00" + n.Reason
		seen[k] = true
		if r.noted[k] {
			continue
		}
		log.FromContext(ctx).Info("no per-update entries for a pending update", "update", n.Subject, "reason", n.Reason)
		if f, ok := forecastOf(n.Subject); ok && r.Recorder != nil {
			r.Recorder.Eventf(&v1alpha1.UpdateForecast{ObjectMeta: metav1.ObjectMeta{Name: f}}, nil, corev1.EventTypeWarning, "MCOEntriesNotWritten", "MCOEntries", "%s", n.Reason)
		}
	}
	r.noted = seen
}

// forecastOf names the forecast of a move note's subject, "pool P: A -> B".
func forecastOf(subject string) (string, bool) {
	pool, rest, ok := strings.Cut(strings.TrimPrefix(subject, "pool "), ": ")
	if !ok {
		return "", false
	}
	from, to, ok := strings.Cut(rest, " -> ")
	if !ok {
		return "", false
	}
	return ForecastName(pool, from, to), true
}

func equalMCOStatus(a, b v1alpha1.PolicyMCOStatus) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// policyMCOStatus is what one policy's status.mco says: a pure function of
// the static result, the static entries written, the conflicts and the per-update
// entries of the changes the policy decided.
func policyMCOStatus(p policy.Policy, st *mcoentries.StaticResult, static mcoentries.Entries, conflicts map[string]mcoentries.Conflict, perUpdate mcoentries.Entries) v1alpha1.PolicyMCOStatus {
	var s v1alpha1.PolicyMCOStatus
	for _, f := range static.Files {
		if slices.Contains(st.From["file:"+f.Path], p.Name) {
			s.Entries = append(s.Entries, fmt.Sprintf("file %s: %s", f.Path, planner.FormatActions(f.Actions)))
		}
	}
	for _, u := range static.Units {
		if slices.Contains(st.From["unit:"+string(u.Name)], p.Name) {
			s.Entries = append(s.Entries, fmt.Sprintf("unit %s: %s", u.Name, planner.FormatActions(u.Actions)))
		}
	}
	if len(static.SSHKey.Actions) > 0 && slices.Contains(st.From["sshkey"], p.Name) {
		s.Entries = append(s.Entries, "sshkey: "+planner.FormatActions(static.SSHKey.Actions)+" (the MCO applies it to the password hash too)")
	}
	for _, u := range st.Unexpressed {
		if slices.Contains(strings.Split(u.Policy, ", "), p.Name) {
			s.NotExpressed = append(s.NotExpressed, u.Subject+": "+u.Reason)
		}
	}
	for subj, from := range st.From {
		if c, ok := conflicts[subj]; ok && slices.Contains(from, p.Name) {
			s.Conflicts = append(s.Conflicts, c.String())
		}
	}
	sort.Strings(s.Conflicts)
	for _, f := range perUpdate.Files {
		s.UpdateEntries = append(s.UpdateEntries, fmt.Sprintf("file %s: %s", f.Path, planner.FormatActions(f.Actions)))
	}
	for _, u := range perUpdate.Units {
		s.UpdateEntries = append(s.UpdateEntries, fmt.Sprintf("unit %s: %s", u.Name, planner.FormatActions(u.Actions)))
	}
	if len(perUpdate.SSHKey.Actions) > 0 {
		s.UpdateEntries = append(s.UpdateEntries, "sshkey: "+planner.FormatActions(perUpdate.SSHKey.Actions))
	}
	declared := len(p.Files) + len(p.Units)
	if p.SSHKey != nil && len(p.SSHKey.Actions) > 0 {
		declared++
	}
	switch {
	case declared == 0:
		s.State = v1alpha1.MCOEntriesNone
	case len(s.Entries) == 0:
		s.State = v1alpha1.MCOEntriesNotWritten
	case len(s.NotExpressed) > 0 || len(s.Conflicts) > 0:
		s.State = v1alpha1.MCOEntriesPartial
	default:
		s.State = v1alpha1.MCOEntriesWritten
	}
	return s
}

// addedOrChanged lists the subjects of e that cur lacks or holds otherwise.
func addedOrChanged(e, cur mcoentries.Entries) []string {
	have := map[string]string{}
	for _, f := range cur.Files {
		b, _ := json.Marshal(f.Actions)
		have["file:"+f.Path] = string(b)
	}
	for _, u := range cur.Units {
		b, _ := json.Marshal(u.Actions)
		have["unit:"+string(u.Name)] = string(b)
	}
	if len(cur.SSHKey.Actions) > 0 {
		b, _ := json.Marshal(cur.SSHKey.Actions)
		have["sshkey"] = string(b)
	}
	var out []string
	for _, f := range e.Files {
		if b, _ := json.Marshal(f.Actions); have["file:"+f.Path] != string(b) {
			out = append(out, "file:"+f.Path)
		}
	}
	for _, u := range e.Units {
		if b, _ := json.Marshal(u.Actions); have["unit:"+string(u.Name)] != string(b) {
			out = append(out, "unit:"+string(u.Name))
		}
	}
	if len(e.SSHKey.Actions) > 0 {
		if b, _ := json.Marshal(e.SSHKey.Actions); have["sshkey"] != string(b) {
			out = append(out, "sshkey")
		}
	}
	return out
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

func without(a, drop []string) []string {
	return slices.DeleteFunc(slices.Clone(a), func(s string) bool { return slices.Contains(drop, s) })
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
