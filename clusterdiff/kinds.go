package clusterdiff

import (
	"fmt"
	"slices"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	operatorv1alpha1 "github.com/openshift/api/operator/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// Kind is a kind a diff reads.
type Kind struct {
	Group, Kind string
	// Resource is the API resource (lower-case plural), as must-gather
	// names its directories and RBAC names the permission.
	Resource string
	// Names are what a user may type for it, kubectl-style: short name,
	// singular, plural, plural.group.
	Names   []string
	New     func() client.Object
	NewList func() client.ObjectList
	// Change: the kind may appear in a change set (the others are only
	// read from the cluster).
	Change bool
	// Namespaced: only ConfigMaps (policy bundles); the rest are
	// cluster-scoped.
	Namespaced bool
}

const (
	groupMC       = "machineconfiguration.openshift.io"
	groupConfig   = "config.openshift.io"
	groupOperator = "operator.openshift.io"
)

// Kinds are every kind a diff reads, in the order a live read lists them
// (ConfigMaps last: which ones is decided by the NodeDisruptionPolicies).
var Kinds = []Kind{
	kind(groupMC, "MachineConfig", "machineconfigs", true, func() client.Object { return &ndpmcv1.MachineConfig{} }, func() client.ObjectList { return &ndpmcv1.MachineConfigList{} }, "mc"),
	kind(groupMC, "MachineConfigPool", "machineconfigpools", true, func() client.Object { return &mcfgv1.MachineConfigPool{} }, func() client.ObjectList { return &mcfgv1.MachineConfigPoolList{} }, "mcp"),
	kind(groupMC, "KubeletConfig", "kubeletconfigs", true, func() client.Object { return &mcfgv1.KubeletConfig{} }, func() client.ObjectList { return &mcfgv1.KubeletConfigList{} }),
	kind(groupMC, "ContainerRuntimeConfig", "containerruntimeconfigs", true, func() client.Object { return &mcfgv1.ContainerRuntimeConfig{} }, func() client.ObjectList { return &mcfgv1.ContainerRuntimeConfigList{} }, "ctrcfg"),
	kind(groupConfig, "ImageDigestMirrorSet", "imagedigestmirrorsets", true, func() client.Object { return &configv1.ImageDigestMirrorSet{} }, func() client.ObjectList { return &configv1.ImageDigestMirrorSetList{} }, "idms"),
	kind(groupConfig, "ImageTagMirrorSet", "imagetagmirrorsets", true, func() client.Object { return &configv1.ImageTagMirrorSet{} }, func() client.ObjectList { return &configv1.ImageTagMirrorSetList{} }, "itms"),
	kind(groupOperator, "ImageContentSourcePolicy", "imagecontentsourcepolicies", true, func() client.Object { return &operatorv1alpha1.ImageContentSourcePolicy{} }, func() client.ObjectList { return &operatorv1alpha1.ImageContentSourcePolicyList{} }, "icsp"),
	// Plain "image" names this one: the diff reads no other Image.
	kind(groupConfig, "Image", "images", true, func() client.Object { return &configv1.Image{} }, func() client.ObjectList { return &configv1.ImageList{} }),
	kind(groupOperator, "MachineConfiguration", "machineconfigurations", true, func() client.Object { return &operatorv1.MachineConfiguration{} }, func() client.ObjectList { return &operatorv1.MachineConfigurationList{} }),
	kind(groupMC, "ControllerConfig", "controllerconfigs", false, func() client.Object { return &mcfgv1.ControllerConfig{} }, func() client.ObjectList { return &mcfgv1.ControllerConfigList{} }),
	kind(groupConfig, "Infrastructure", "infrastructures", false, func() client.Object { return &configv1.Infrastructure{} }, func() client.ObjectList { return &configv1.InfrastructureList{} }),
	kind("", "Node", "nodes", false, func() client.Object { return &corev1.Node{} }, func() client.ObjectList { return &corev1.NodeList{} }, "no"),
	kind(v1alpha1.GroupVersion.Group, v1alpha1.Kind, "nodedisruptionpolicies", true, func() client.Object { return &v1alpha1.NodeDisruptionPolicy{} }, func() client.ObjectList { return &v1alpha1.NodeDisruptionPolicyList{} }, "ndp"),
	kind(v1alpha1.GroupVersion.Group, "RolloutPolicy", "rolloutpolicies", true, func() client.Object { return &v1alpha1.RolloutPolicy{} }, func() client.ObjectList { return &v1alpha1.RolloutPolicyList{} }, "rp"),
	func() Kind {
		k := kind("", "ConfigMap", "configmaps", true, func() client.Object { return &corev1.ConfigMap{} }, func() client.ObjectList { return &corev1.ConfigMapList{} }, "cm")
		k.Namespaced = true
		return k
	}(),
}

func kind(group, name, resource string, change bool, newObj func() client.Object, newList func() client.ObjectList, short ...string) Kind {
	names := append(append([]string{}, short...), strings.ToLower(name), resource)
	if group != "" {
		names = append(names, resource+"."+group)
	}
	return Kind{Group: group, Kind: name, Resource: resource, Names: names, New: newObj, NewList: newList, Change: change}
}

// GVK is the kind's group, version and kind in Scheme.
func (k Kind) GVK() schema.GroupVersionKind {
	gvks, _, err := Scheme.ObjectKinds(k.New())
	if err != nil {
		panic(err) // every kind of the table is registered: a programming error
	}
	return gvks[0]
}

// KindNamed is the kind a user means by s, as kubectl reads a resource
// name: a short name, singular or plural, optionally followed by
// .group (or a leading part of the group, "image.config"), the version
// optionally before the group ("mc.v1.machineconfiguration.openshift.io"),
// or the kind itself ("MachineConfig").
func KindNamed(s string) (Kind, bool) {
	s = strings.ToLower(s)
	name, group, qualified := strings.Cut(s, ".")
	if qualified {
		if v, rest, ok := strings.Cut(group, "."); ok && isVersion(v) {
			group = rest
		}
	}
	for _, k := range Kinds {
		for _, n := range k.Names {
			if n == s && !qualified || n == name && qualified && k.Group != "" && (k.Group == group || strings.HasPrefix(k.Group, group+".")) {
				return k, true
			}
		}
	}
	return Kind{}, false
}

func isVersion(s string) bool {
	return len(s) > 1 && s[0] == 'v' && s[1] >= '0' && s[1] <= '9'
}

// kindOf is the table's kind of group and kind.
func kindOf(group, kind string) (Kind, bool) {
	for _, k := range Kinds {
		if k.Group == group && k.Kind == kind {
			return k, true
		}
	}
	return Kind{}, false
}

// ParseDeletion reads a --delete argument: KIND/NAME, or for a ConfigMap
// KIND/NAMESPACE/NAME.
func ParseDeletion(s string) (Key, error) {
	parts := strings.Split(s, "/")
	k, ok := KindNamed(parts[0])
	switch {
	case len(parts) < 2 || len(parts) > 3 || slices.Contains(parts, ""):
		return Key{}, fmt.Errorf("--delete %q: want KIND/NAME (e.g. mc/99-worker-ssh, or cm/NAMESPACE/NAME for a ConfigMap)", s)
	case !ok:
		return Key{}, fmt.Errorf("--delete %q: unknown kind %q; a change set deletes %s", s, parts[0], changeKindNames())
	case !k.Change:
		return Key{}, fmt.Errorf("--delete %q: a %s is read from the cluster, not something a change set deletes; a change set deletes %s", s, k.Kind, changeKindNames())
	case k.Namespaced && len(parts) != 3:
		return Key{}, fmt.Errorf("--delete %q: a %s is namespaced: want %s/NAMESPACE/NAME", s, k.Kind, parts[0])
	case !k.Namespaced && len(parts) != 2:
		return Key{}, fmt.Errorf("--delete %q: a %s is cluster-scoped: want %s/NAME", s, k.Kind, parts[0])
	}
	key := Key{Group: k.Group, Kind: k.Kind, Name: parts[len(parts)-1]}
	if k.Namespaced {
		key.Namespace = parts[1]
	}
	return key, nil
}

// changeKindNames lists the kinds a change set may hold, with the shortest
// name a user may type for each.
func changeKindNames() string {
	var out []string
	for _, k := range Kinds {
		if k.Change {
			out = append(out, fmt.Sprintf("%s (%s)", k.Kind, k.Names[0]))
		}
	}
	return strings.Join(out, ", ")
}
