// Package rolloutgates evaluates a RolloutPolicy's gates for real: it asks
// Prometheus (its alerts and a PromQL query, through client_golang's API
// client) and Alertmanager (its v2 alerts), and lists the blocking pods from
// a controller-runtime client.Reader (the manager's cache), and hands the
// results to rolloutcontrol.EvaluateGates, which decides.
//
// Evaluator caches the remote answers per policy, so the rollout controller
// may ask on every reconcile: per policy and per interval (30s by default)
// it makes at most 1 Prometheus alerts call, 1 Prometheus query and 1
// Alertmanager alerts call (only those the policy sets), whatever the
// number of pools, nodes or reconciles; none per node. The blocking-pod
// gate reads the cache at most every 5s per policy: 0 API requests with a
// cached reader.
// Remote and BlockingPods are the two halves of Results, for a caller that
// reads the pods only when they matter (the rollout controller: when a
// node would start).
//
// In a reconcile (e from NewEvaluator(mgr.GetCache(), Options{}), made
// once; Forget a deleted policy):
//
//	res, next := e.Results(ctx, policy)
//	verdict := rolloutcontrol.EvaluateGates(compiled, res)
//	// requeue at next (when non-zero) to see the remote gates change
//
// The blocking-pod gate reads pods and namespaces through the reader: the
// controller needs list and watch on both (RBAC), and watches pods to
// see a blocking pod go.
//
// It stands on apis and rolloutcontrol (level 3 of docs/design.md's import
// rule, like render): the controllers use it, it uses none of them.
package rolloutgates
