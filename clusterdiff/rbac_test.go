package clusterdiff

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// TestLiveReadsNeedOnlyTheirRole: every kind ReadLive lists is granted,
// get and list only, by the ClusterRole ndp-diff of both installs, and
// each install's controller role grants the same reads (a live diff needs
// no more than ndp-controller has) — but for RolloutPolicies on OpenShift,
// whose install has none (the MCO paces the rollout there).
func TestLiveReadsNeedOnlyTheirRole(t *testing.T) {
	for _, install := range []string{"../manifests", "../overlays/openshift"} {
		roles := clusterRoles(t, install)
		diff, ok := roles["ndp-diff"]
		if !ok {
			t.Fatalf("%s has no ClusterRole ndp-diff", install)
		}
		for _, r := range diff.Rules {
			for _, v := range r.Verbs {
				if v != "get" && v != "list" {
					t.Errorf("%s: ClusterRole ndp-diff grants %q on %v: a diff only reads", install, v, r.Resources)
				}
			}
		}
		for _, k := range Kinds {
			if !grants(diff, k.Group, k.Resource, "get", "list") {
				t.Errorf("%s: ClusterRole ndp-diff does not grant get and list on %s.%s, which ReadLive lists: add it to clusterdiff/rbac.go and run make generate", install, k.Resource, k.Group)
			}
			if install == "../overlays/openshift" && k.Resource == "rolloutpolicies" {
				continue
			}
			if !grants(roles["ndp-controller"], k.Group, k.Resource, "get", "list") {
				t.Errorf("%s: ClusterRole ndp-controller does not read %s.%s, which a live diff reads", install, k.Resource, k.Group)
			}
		}
	}
}

func clusterRoles(t *testing.T, dir string) map[string]*rbacv1.ClusterRole {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*rbacv1.ClusterRole{}
	for _, r := range m.Resources() {
		if r.GetKind() != "ClusterRole" {
			continue
		}
		js, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var cr rbacv1.ClusterRole
		if err := yaml.Unmarshal(js, &cr); err != nil {
			t.Fatal(err)
		}
		out[cr.Name] = &cr
	}
	return out
}

// grants tells whether a role's rules allow every verb on the resource.
func grants(role *rbacv1.ClusterRole, group, resource string, verbs ...string) bool {
	if role == nil {
		return false
	}
	for _, v := range verbs {
		ok := false
		for _, r := range role.Rules {
			if (slices.Contains(r.APIGroups, group) || slices.Contains(r.APIGroups, "*")) &&
				(slices.Contains(r.Resources, resource) || slices.Contains(r.Resources, "*")) &&
				(slices.Contains(r.Verbs, v) || slices.Contains(r.Verbs, "*")) && len(r.ResourceNames) == 0 {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
