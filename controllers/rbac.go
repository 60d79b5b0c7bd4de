package controllers

// ndp-controller's default install (manifests) runs --mode=auto, which turns
// to the advisor where the MCO runs: its role is both modes' (Makefile
// AUTO_RBAC_PATHS). The advisor's observer reads Events in the MCO daemon's
// and the kubelet's namespaces only (namespaced Roles, bound by the advisor's
// install); the default install cannot hold a Role in a namespace a plain
// Kubernetes cluster lacks, so it drops those Roles and reads Events here,
// cluster-wide (the cache still watches those two namespaces alone:
// CacheOptions).
// +kubebuilder:rbac:groups="",resources=events,verbs=get;list;watch
