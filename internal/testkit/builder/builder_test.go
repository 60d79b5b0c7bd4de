package builder_test

import (
	"encoding/json"
	"reflect"
	"testing"

	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ndp-dev/ndp/internal/testkit/builder"
)

func TestMachineConfig(t *testing.T) {
	mc := builder.MachineConfig("50-worker-chrony").WithRole("worker").
		WithFile("/etc/chrony.conf", "pool a b\n").
		WithFiles(builder.FileB64("/etc/b64", "x").With("mode", 420)).
		WithUnit("chronyd.service", "").
		WithKernelArguments("a=1").WithOSImageURL("quay.io/os@sha256:1").Build()
	if mc.Name != "50-worker-chrony" || mc.Labels["machineconfiguration.openshift.io/role"] != "worker" ||
		!reflect.DeepEqual(mc.Spec.KernelArguments, []string{"a=1"}) || mc.Spec.OSImageURL != "quay.io/os@sha256:1" {
		t.Fatalf("%+v", mc)
	}
	want := `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"contents":{"source":"data:,pool%20a%20b%0A"},"path":"/etc/chrony.conf"},{"contents":{"source":"data:;base64,eA=="},"mode":420,"path":"/etc/b64"}]},"systemd":{"units":[{"name":"chronyd.service"}]}}`
	if got := string(mc.Spec.Config.Raw); got != want {
		t.Errorf("config:\n%s\nwant\n%s", got, want)
	}
}

func TestDocument(t *testing.T) {
	doc := builder.MachineConfig("a").WithConfig(map[string]any{"passwd": map[string]any{}}).WithSpec("fips", true).Document()
	var got map[string]any
	if err := json.Unmarshal(doc, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig", "metadata": map[string]any{"name": "a"},
		"spec": map[string]any{"fips": true, "config": map[string]any{"ignition": map[string]any{"version": "3.4.0"}, "passwd": map[string]any{}}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s", doc)
	}
}

func TestRawConfig(t *testing.T) {
	if mc := builder.MachineConfig("x").WithRawConfig(`{"ignition":{"version":"2.2.0"}}`).Build(); string(mc.Spec.Config.Raw) != `{"ignition":{"version":"2.2.0"}}` {
		t.Error(string(mc.Spec.Config.Raw))
	}
}

func TestFileGzipAndSource(t *testing.T) {
	ign := builder.Ignition().WithFiles(builder.FileGzip("/a", "x"), builder.FileSource("/b", "data:text/plain;base64,eA==")).Build()
	files := ign["storage"].(map[string]any)["files"].([]any)
	if c := files[0].(map[string]any)["contents"].(map[string]any); c["compression"] != "gzip" {
		t.Errorf("%v", c)
	}
	if c := files[1].(map[string]any)["contents"].(map[string]any); c["source"] != "data:text/plain;base64,eA==" {
		t.Errorf("%v", c)
	}
	doc := builder.MachineConfig("a").WithSpecFields(map[string]any{"kernelType": "realtime"}).Build()
	if doc.Spec.KernelType != "realtime" {
		t.Errorf("%+v", doc.Spec)
	}
}

func TestConfig(t *testing.T) {
	cfg := builder.MachineConfig("rendered-worker-a").WithFile("/etc/x", "x").WithKernelArguments("quiet").Config(t)
	if cfg.Name != "rendered-worker-a" || len(cfg.Ignition.Storage.Files) != 1 || cfg.Ignition.Storage.Files[0].Path != "/etc/x" || len(cfg.Spec.KernelArguments) != 1 {
		t.Errorf("parsed %+v", cfg)
	}
}

// A MachineConfiguration's actions, written as ndp prints them, are the
// spec's actions; an empty one has no spec.
func TestMachineConfiguration(t *testing.T) {
	doc := builder.MachineConfiguration().
		WithFileActions("/etc/chrony.conf", "Restart chronyd.service").
		WithUnitActions("kubelet.service", "DaemonReload", "Reload kubelet.service").
		WithSSHKeyActions("Drain").
		WithSpec("irreconcilableValidationOverrides", map[string]any{"storage": []string{"Disks"}}).Document()
	var got operatorv1.MachineConfiguration
	if err := json.Unmarshal(doc, &got); err != nil {
		t.Fatal(err)
	}
	want := operatorv1.MachineConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "operator.openshift.io/v1", Kind: "MachineConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
		Spec: operatorv1.MachineConfigurationSpec{
			NodeDisruptionPolicy: operatorv1.NodeDisruptionPolicyConfig{
				Files: []operatorv1.NodeDisruptionPolicySpecFile{{Path: "/etc/chrony.conf", Actions: []operatorv1.NodeDisruptionPolicySpecAction{
					{Type: operatorv1.RestartSpecAction, Restart: &operatorv1.RestartService{ServiceName: "chronyd.service"}}}}},
				Units: []operatorv1.NodeDisruptionPolicySpecUnit{{Name: "kubelet.service", Actions: []operatorv1.NodeDisruptionPolicySpecAction{
					{Type: operatorv1.DaemonReloadSpecAction}, {Type: operatorv1.ReloadSpecAction, Reload: &operatorv1.ReloadService{ServiceName: "kubelet.service"}}}}},
				SSHKey: operatorv1.NodeDisruptionPolicySpecSSHKey{Actions: []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.DrainSpecAction}}},
			},
			IrreconcilableValidationOverrides: operatorv1.IrreconcilableValidationOverrides{Storage: []operatorv1.IrreconcilableValidationOverridesStorage{"Disks"}},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s", doc)
	}
	if got, want := string(builder.MachineConfiguration().Document()), `{"apiVersion":"operator.openshift.io/v1","kind":"MachineConfiguration","metadata":{"name":"cluster"}}`; got != want {
		t.Errorf("empty: %s, want %s", got, want)
	}
}
