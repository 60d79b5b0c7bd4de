package main

import (
	"errors"
	"io"
	"os"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// The advisor's role, as make generate writes it from the markers of the
// code the advisor runs (manifests/rbac/advisor), writes nothing the
// Machine Config Operator or the cluster version operator owns: only what
// its client lets through (controllers/advisor.AdvisorClient), ndp.dev
// resources, Events and its Lease. A marker that asks for more on the
// advisor's code fails here (the hand-written ClusterRole of
// overlays/openshift-mco-entries, the one opt-in write of
// MachineConfiguration cluster, is not the generated role).
func TestAdvisorRoleWritesOnlyNdpsOwn(t *testing.T) {
	f, err := os.Open("../../manifests/rbac/advisor/role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	writes := 0
	for {
		var role rbacv1.ClusterRole // a Role's rules are the same shape
		if err := dec.Decode(&role); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		for _, r := range role.Rules {
			verbs := slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return v == "get" || v == "list" || v == "watch" })
			if len(verbs) == 0 {
				continue
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					writes++
					own := g == "ndp.dev" || (res == "events" && (g == "" || g == "events.k8s.io")) || (g == "coordination.k8s.io" && res == "leases")
					if !own {
						t.Errorf("%s %s/%s may %v %s in group %q: the advisor writes only ndp.dev, Events and Leases", role.Kind, role.Namespace, role.Name, verbs, res, g)
					}
				}
			}
		}
	}
	if writes == 0 {
		t.Fatal("no write in manifests/rbac/advisor/role.yaml: not the advisor's role (it writes UpdateForecasts)")
	}
}
