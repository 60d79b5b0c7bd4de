// Package rolloutgates evaluates a RolloutPolicy's gates for real: it asks
// Prometheus (its alerts and a PromQL query, through client_golang's API
// client) and Alertmanager (its v2 alerts), and lists the blocking pods from
// a controller-runtime client.Reader (the API server: the controller does
// not watch pods), and hands the results to rolloutcontrol.EvaluateGates,
// which decides. DrainedNotReady reads, for the drained-pods pacing, the
// owners of the pods a node's drain evicted and, only for those that may
// have pods on their way, their pods.
//
// Evaluator caches the remote answers per policy, so the rollout controller
// may ask on every reconcile: per policy and per interval (30s by default)
// it makes at most 1 Prometheus alerts call, 1 Prometheus query and 1
// Alertmanager alerts call (only those the policy sets), whatever the
// number of pools, nodes or reconciles; none per node. The blocking-pod
// gate lists pods at most every 5s per policy, and only when a node would
// start.
// Remote and BlockingPods are the two halves of Results, for a caller that
// reads the pods only when they matter (the rollout controller: when a
// node would start).
//
// In a reconcile (e from NewEvaluator(mgr.GetAPIReader(), Options{}), made
// once; Forget a deleted policy):
//
//	res, next := e.Results(ctx, policy)
//	verdict := rolloutcontrol.EvaluateGates(compiled, res)
//	// requeue at next (when non-zero) to see the remote gates change
//
// The reader needs list on pods, get on namespaces, and get on
// ReplicaSets, StatefulSets and ReplicationControllers (RBAC); a blocking
// pod that goes is seen at the next read (the controller polls while one
// holds).
//
// It stands on apis and rolloutcontrol (level 3 of docs/design.md's import
// rule, like render): the controllers use it, it uses none of them.
package rolloutgates
