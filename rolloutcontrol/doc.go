// Package rolloutcontrol holds the decisions of a RolloutPolicy
// (ndp.dev/v1alpha1), pure: given the policies that select a pool, the
// evaluated gates, the pool's nodes, their plans and the time, which of
// today's candidates may start now, in what order, and why the others wait
// and until when. It only ever removes starts: the count it is given (the
// pool's maxUnavailable less the nodes out) is never exceeded, and a node
// that has started is not its business (it finishes).
//
// Time is always a parameter. The package stands on apis and Kubernetes'
// types alone (level 2 of docs/design.md#the-import-rule): no client, no
// Prometheus client; the caller evaluates the gates and passes the results.
package rolloutcontrol
