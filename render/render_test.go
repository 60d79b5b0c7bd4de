package render_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/loader"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/render"
)

// source is a source MachineConfig of ign, an Ignition 3.2.0 config.
func source(name string, ign *builder.IgnitionBuilder, spec mcfgv1.MachineConfigSpec) render.Source {
	spec.Config = runtime.RawExtension{Raw: ign.WithVersion("3.2.0").JSON()}
	return render.Source{Name: name, Spec: spec}
}

// files is an Ignition config of files (path, contents, path, ...).
func files(paths ...string) *builder.IgnitionBuilder {
	ign := builder.Ignition()
	for i := 0; i+1 < len(paths); i += 2 {
		ign.WithFile(paths[i], paths[i+1])
	}
	return ign
}

// users is an Ignition config of user core with an SSH key.
func users(key string) *builder.IgnitionBuilder {
	return builder.Ignition().WithEntries("passwd", "users", builder.Entry{"name": "core", "sshAuthorizedKeys": []any{key}})
}

func parse(t *testing.T, r *render.Rendered) *machineconfig.Config {
	t.Helper()
	cfg, err := machineconfig.New(r.Name, r.Spec)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Sources = r.Sources
	return cfg
}

func TestMergeInNameOrder(t *testing.T) {
	srcs := []render.Source{
		source("99-override", files("/etc/a", "from 99"), mcfgv1.MachineConfigSpec{KernelArguments: []string{"b=2"}, Extensions: []string{"usbguard"}, KernelType: "realtime"}),
		source("00-base", files("/etc/a", "from 00", "/etc/b", "b"), mcfgv1.MachineConfigSpec{OSImageURL: "quay.io/os@sha256:1", KernelArguments: []string{"a=1"}, Extensions: []string{"usbguard", "kerberos"}}),
		source("50-users", users("ssh-ed25519 AAAA k2"), mcfgv1.MachineConfigSpec{}),
		source("10-users", users("ssh-ed25519 AAAA k1"), mcfgv1.MachineConfigSpec{}),
	}
	r, err := render.Merge("worker", srcs)
	if err != nil {
		t.Fatal(err)
	}
	cfg := parse(t, r)
	got := map[string]string{}
	for _, f := range cfg.Ignition.Storage.Files {
		got[f.Path] = *f.Contents.Source
	}
	if d := cmp.Diff(map[string]string{"/etc/a": "data:,from%2099", "/etc/b": "data:,b"}, got); d != "" {
		t.Errorf("files (-want +got):\n%s", d)
	}
	// The OS fields' source is the last that sets each: 00-base alone sets
	// the image.
	if d := cmp.Diff(map[string]string{"file:/etc/a": "99-override", "file:/etc/b": "00-base",
		"os:osImageURL": "00-base", "os:kernelArguments": "99-override", "os:extensions": "99-override", "os:kernelType": "99-override"}, r.Sources); d != "" {
		t.Errorf("sources (-want +got):\n%s", d)
	}
	// Extensions are concatenated in merge order, duplicates kept, as the
	// MCO's MergeMachineConfigs does (they were sorted and united before;
	// the planner reads them as a set either way).
	if !cmp.Equal(r.Spec.KernelArguments, []string{"a=1", "b=2"}) || !cmp.Equal(r.Spec.Extensions, []string{"usbguard", "kerberos", "usbguard"}) ||
		r.Spec.OSImageURL != "quay.io/os@sha256:1" || r.Spec.KernelType != "realtime" {
		t.Errorf("spec: %+v", r.Spec)
	}
	if keys := cfg.Ignition.Passwd.Users[0].SSHAuthorizedKeys; len(keys) != 2 || keys[0] != "ssh-ed25519 AAAA k1" {
		t.Errorf("core keys: %v", keys)
	}
	again, err := render.Merge("worker", []render.Source{srcs[3], srcs[2], srcs[1], srcs[0]})
	if err != nil || again.Name != r.Name {
		t.Errorf("the same sources in another order render %s, want %s (%v)", again.Name, r.Name, err)
	}
	srcs[0] = source("99-override", files("/etc/a", "changed"), mcfgv1.MachineConfigSpec{})
	if changed, _ := render.Merge("worker", srcs); changed.Name == r.Name {
		t.Error("different content, same rendered name")
	}
}

func TestRenderedChangeCarriesItsSource(t *testing.T) {
	base := source("00-base", files("/etc/kubernetes/kubelet.conf", "x"), mcfgv1.MachineConfigSpec{OSImageURL: "quay.io/os@sha256:1"})
	a, err := render.Merge("worker", []render.Source{base})
	if err != nil {
		t.Fatal(err)
	}
	b, err := render.Merge("worker", []render.Source{base, source("50-haproxy-template", files("/etc/haproxy/haproxy.cfg", "global"), mcfgv1.MachineConfigSpec{})})
	if err != nil {
		t.Fatal(err)
	}
	pols, _, err := loader.Load("../examples/bundles/haproxy")
	if err != nil {
		t.Fatal(err)
	}
	p, err := planner.New(context.Background(), append([]policy.Policy{policy.DefaultPolicy()}, pols...), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := p.Plan(context.Background(), planner.Request{From: parse(t, a), To: parse(t, b)})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Actions) != 1 || plan.Actions[0].Type != policy.ActionReload || plan.Drain || plan.Reasons[0].Policy != "haproxy" {
		t.Errorf("a template owner's file from its MachineConfig: %+v", plan)
	}
}

func TestMergeNamesABadSource(t *testing.T) {
	bad := render.Source{Name: "50-broken", Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte(`{"ignition":{"version":"2.2.0"}}`)}}}
	if _, err := render.Merge("worker", []render.Source{bad}); err == nil || !strings.Contains(err.Error(), `MachineConfig "50-broken"`) {
		t.Errorf("got %v", err)
	}
}
