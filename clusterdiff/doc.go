// Package clusterdiff answers, for a set of manifests not yet applied (a
// pull request, a GitOps sync), what each MachineConfigPool's nodes would
// do: the rendered config each pool would move to, as the MCO names it on
// OpenShift (or as ndp's render controller names it elsewhere), the nodes
// that would go, and the plans, with the object behind every change and
// what a RolloutPolicy would do with it.
//
// The stages, each one file:
//
//   - objects.go: the cluster as objects (a snapshot or a live read), with
//     the change set applied over it, readable as a client.Reader;
//     kinds.go: the kinds it reads and the names users type for them;
//   - load.go, snapshot.go, live.go: manifests (-f, -k), snapshots
//     (`oc get -o yaml`, must-gather) and a live cluster into objects;
//     rbac.go: the read access a live diff needs (ClusterRole ndp-diff);
//   - apply.go: the change set applied as `kubectl apply` leaves objects,
//     and what the render controller would refuse;
//   - generate.go: the MachineConfigs the MCO's (or ndp's) KubeletConfig,
//     ContainerRuntimeConfig and registries controllers would write;
//   - diff.go: every pool rendered before and after, its nodes grouped by
//     the config they run;
//   - plans.go: each group planned (mcorules for the MCO, ndp's planner
//     beside it, the entries that give ndp's plan), every change with the
//     objects behind it; rollout.go: how the update would roll out;
//   - report.go: the result, whose JSON form is documented
//     (docs/diff.md) and stable.
//
// Nothing here writes to a cluster.
package clusterdiff
