// Package controllers wires ndp's controllers into a manager, for either
// mode: the executor's (package executor) or the advisor's (package
// advisor), each with the policy controller (package policy) both share.
// Each controller is a small reconciler with one job, level-triggered and
// idempotent. The active policy set they plan with is policyset's; the
// rendering and the pool view they read, render's; their manager's scheme
// is apis/scheme's.
package controllers

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ndp-dev/ndp/controllers/advisor"
	"github.com/ndp-dev/ndp/controllers/executor"
	"github.com/ndp-dev/ndp/mco/mcoguard"
)

// Options tune the controllers SetupWithManager wires; the zero value is
// what ships.
type Options struct {
	// RetryRejected is how often a rejected NodeDisruptionPolicy is
	// compiled again (PolicyReconciler.RetryRejected; a minute when zero).
	RetryRejected time.Duration
	// MCO tells the controllers that stand down beside the Machine Config
	// Operator whether it is there; nil: SetupWithManager makes one, run
	// by the manager. ndp-controller passes the guard its mode was decided
	// with.
	MCO *mcoguard.Guard
	// MCOEntries, as advisor, is what ndp keeps in the MCO's node
	// disruption policy (advisor.MCOEntriesOff when empty, advisor.MCOEntriesStatic or
	// advisor.MCOEntriesPerUpdate): advisor.MCOEntriesReconciler.
	MCOEntries string
	// Gates evaluates RolloutPolicies' gates (package rolloutgates); nil:
	// a policy's gates are never evaluated, so they hold its pools (or,
	// with failOpen, warn).
	Gates executor.GateSource
}

// ClientOptions configure the manager's client: bundles live in ConfigMaps
// in any namespace, so the controller watches only their metadata and reads
// the one it needs from the API server, instead of caching every
// ConfigMap's data (and reading a stale copy right after a change).
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.ConfigMap{}}}}
}

// CacheOptions configure the manager's cache: no controller reads a
// DaemonSet through it (the MCO's daemon is watched by mcoguard's Guard),
// and should one, the cache lists and watches only the MCO's daemon, by
// name and namespace: ndp-controller's role may read no other DaemonSet,
// and a cluster's DaemonSets are not cached for nothing. Events (the
// advisor's observer reads them) are cached from the MCO daemon's and the
// kubelet's namespaces only, not the whole cluster's. Objects are
// cached without their managedFields, which nothing in ndp reads (an
// update of a cached object leaves them to the API server). Every manager
// that runs SetupWithManager must use it.
func CacheOptions() cache.Options {
	return cache.Options{DefaultTransform: cache.TransformStripManagedFields(), ByObject: map[client.Object]cache.ByObject{
		&appsv1.DaemonSet{}: {
			Namespaces: map[string]cache.Config{mcoguard.DaemonSetNamespace: {}},
			Field:      fields.OneTermEqualSelector("metadata.name", mcoguard.DaemonSetName),
		},
		&corev1.Event{}: {
			Namespaces: map[string]cache.Config{advisor.MCDEventNamespace: {}, advisor.KubeletEventNamespace: {}},
			Field:      fields.OneTermEqualSelector("involvedObject.kind", "Node"),
		},
	}}
}
