package mcorules_test

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	operatorv1 "github.com/openshift/api/operator/v1"
	"sigs.k8s.io/yaml"

	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/mco/mcorules"
)

// mcoRef is the MCO reference with mco-decide and the real configs, the
// MCO's own decision to compare with (testkit.RequireMCORef: t skips
// without them, or fails with NDP_REQUIRE_MCO_REF=1).
func mcoRef(t *testing.T) string {
	t.Helper()
	testkit.RealConfigs(t)
	return filepath.Dir(testkit.RequireMCORef(t, "mco-decide"))
}

func runMCODecide(t *testing.T, ref, from, to, mcop string) testkit.MCODecision {
	t.Helper()
	return testkit.MCODecide(t, filepath.Join(ref, "mco-decide"), from, to, mcop)
}

func readMachineConfiguration(t *testing.T, path string) *operatorv1.MachineConfiguration {
	t.Helper()
	if path == "" {
		return nil
	}
	mc := &operatorv1.MachineConfiguration{}
	testkit.ReadObject(t, path, mc)
	return mc
}

// actionBag is an action multiset, printed sorted.
func actionBag(types, services []string) string {
	var s []string
	for i := range types {
		a := types[i]
		if services[i] != "" {
			a += " " + services[i]
		}
		s = append(s, a)
	}
	sort.Strings(s)
	return "[" + strings.Join(s, ", ") + "]"
}

// compare decides from → to with ndp and with the MCO, and reports every
// difference in refused, action multiset, drain, reboot, changed files,
// units and passwd, and failure. It returns the MCO's summary.
func compare(t *testing.T, ref, from, to, mcop string) string {
	t.Helper()
	want := runMCODecide(t, ref, from, to, mcop)
	mc := readMachineConfiguration(t, mcop)
	in, _ := mcorules.For(testkit.ReadConfig(t, from), testkit.ReadConfig(t, to), mc, false)
	got, err := mcorules.Decide(in)
	if err != nil {
		t.Fatalf("Decide: %v", err)
	}
	var wt, ws, gt, gs []string
	for _, a := range want.Actions {
		wt, ws = append(wt, a.Type), append(ws, a.Service)
	}
	for _, a := range got.Actions {
		gt, gs = append(gt, string(a.Type)), append(gs, a.Service)
	}
	summary := fmt.Sprintf("refused=%t actions=%s drain=%t reboot=%t error=%t", !want.Reconcilable, actionBag(wt, ws), want.Drain, want.Reboot, want.Error != "")
	gotSummary := fmt.Sprintf("refused=%t actions=%s drain=%t reboot=%t error=%t", len(got.Refused) > 0, actionBag(gt, gs), got.Drain, got.Reboot, got.Error != "")
	if !want.Reconcilable {
		// Actions are not decided for a refused update.
		summary = fmt.Sprintf("refused=true error=%t", want.Error != "")
		gotSummary = fmt.Sprintf("refused=%t error=%t", len(got.Refused) > 0, len(got.Refused) > 0)
	}
	if summary != gotSummary {
		t.Errorf("%s → %s (%s):\n  MCO: %s %s\n  ndp: %s %v %s", filepath.Base(from), filepath.Base(to), filepath.Base(mcop), summary, want.Error, gotSummary, got.Refused, got.Error)
	}
	if !slices.Equal(want.ChangedFiles, got.ChangedFiles) || !slices.Equal(want.ChangedUnits, got.ChangedUnits) || want.SSHChanged != got.SSHChanged {
		t.Errorf("%s → %s: changed files/units/passwd:\n  MCO: %v %v %t\n  ndp: %v %v %t", filepath.Base(from), filepath.Base(to), want.ChangedFiles, want.ChangedUnits, want.SSHChanged, got.ChangedFiles, got.ChangedUnits, got.SSHChanged)
	}
	return summary
}

var renderedName = regexp.MustCompile(`^rendered-(.+)-[0-9a-f]{32}\.yaml$`)

// TestRealPairsAgreeWithMCO: every pair of rendered configs of one pool in
// one real cluster (both directions, and each with itself), decided by
// ndp and by the MCO's own code.
func TestRealPairsAgreeWithMCO(t *testing.T) {
	ref := mcoRef(t)
	clusters, err := filepath.Glob(filepath.Join(ref, "realconfigs", "*"))
	if err != nil || len(clusters) == 0 {
		t.Fatalf("no real configs under %s: %v", ref, err)
	}
	pairs := 0
	outcomes := map[string]int{}
	for _, c := range clusters {
		pools := map[string][]string{}
		entries, _ := os.ReadDir(c)
		for _, e := range entries {
			if m := renderedName.FindStringSubmatch(e.Name()); m != nil {
				pools[m[1]] = append(pools[m[1]], filepath.Join(c, e.Name()))
			}
		}
		for _, cfgs := range pools {
			for _, a := range cfgs {
				for _, b := range cfgs {
					outcomes[compare(t, ref, a, b, "")]++
					pairs++
				}
			}
		}
	}
	t.Logf("%d real pairs (same pool, both directions, self pairs included); MCO outcomes: %v", pairs, outcomes)
	if pairs < 30 {
		t.Fatalf("only %d pairs: the real configs are not all there", pairs)
	}
}

// edit is a change to a real rendered config, as JSON.
type edit struct {
	name string
	// mutate the config (the MachineConfig as a map); from is edited by
	// base when set, so that an edit can remove what base added.
	base, mutate func(t *testing.T, mc map[string]any)
	mcop         string // a MachineConfiguration, YAML
}

func ign(mc map[string]any) map[string]any {
	return mc["spec"].(map[string]any)["config"].(map[string]any)
}

func spec(mc map[string]any) map[string]any { return mc["spec"].(map[string]any) }

func sub(m map[string]any, key string) map[string]any {
	if v, ok := m[key].(map[string]any); ok {
		return v
	}
	v := map[string]any{}
	m[key] = v
	return v
}

func files(mc map[string]any) []any {
	l, _ := sub(ign(mc), "storage")["files"].([]any)
	return l
}

func setFiles(mc map[string]any, l []any) { sub(ign(mc), "storage")["files"] = l }

func dataURL(s string) string {
	return "data:text/plain;charset=utf-8;base64," + base64.StdEncoding.EncodeToString([]byte(s))
}

func fileEntry(path, contents string) map[string]any {
	return map[string]any{"path": path, "mode": 420, "overwrite": true, "contents": map[string]any{"source": dataURL(contents)}}
}

// putFile replaces or adds a file.
func putFile(mc map[string]any, f map[string]any) {
	l := files(mc)
	for i, e := range l {
		if e.(map[string]any)["path"] == f["path"] {
			l[i] = f
			setFiles(mc, l)
			return
		}
	}
	setFiles(mc, append(l, f))
}

func dropFile(mc map[string]any, path string) {
	setFiles(mc, slices.DeleteFunc(files(mc), func(e any) bool { return e.(map[string]any)["path"] == path }))
}

const registriesBase = mcorules.RegistriesBase

// chronyPolicy is a MachineConfiguration with an entry for chrony.conf,
// registries.conf (replacing the MCO's Special) and the kubelet unit, and
// one for SSH keys.
var chronyPolicy = string(builder.MachineConfiguration().
	WithFileActions("/etc/chrony.conf", "Restart chronyd.service").
	WithFileActions("/etc/containers/registries.conf", "Reload crio.service").
	WithUnitActions("kubelet.service", "DaemonReload", "Restart kubelet.service").
	WithSSHKeyActions("Drain").Document())

var disksOverride = string(builder.MachineConfiguration().
	WithSpec("irreconcilableValidationOverrides", map[string]any{"storage": []string{"Disks"}}).Document())

func units(mc map[string]any) []any {
	l, _ := sub(ign(mc), "systemd")["units"].([]any)
	return l
}

var handEdits = []edit{
	{name: "chrony file added", mutate: func(t *testing.T, mc map[string]any) {
		putFile(mc, fileEntry("/etc/chrony.conf", "server a iburst\n"))
	}},
	{name: "chrony file added, policy", mcop: chronyPolicy, mutate: func(t *testing.T, mc map[string]any) {
		putFile(mc, fileEntry("/etc/chrony.conf", "server a iburst\n"))
	}},
	{name: "policy.json changed", mutate: func(t *testing.T, mc map[string]any) {
		putFile(mc, fileEntry("/etc/containers/policy.json", `{"default":[{"type":"reject"}]}`))
	}},
	{name: "pull secret changed", mutate: func(t *testing.T, mc map[string]any) {
		putFile(mc, fileEntry("/var/lib/kubelet/config.json", `{"auths":{}}`))
	}},
	{name: "user CA bundle changed", mutate: func(t *testing.T, mc map[string]any) {
		putFile(mc, fileEntry("/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt", "-----BEGIN CERTIFICATE-----\n"))
	}},
	{name: "registries.conf digest-only mirror added", base: registriesFile(registriesBase), mutate: registriesFile(registriesBase + `
  [[registry.mirror]]
    location = "mirror-b.example.com"
    pull-from-mirror = "digest-only"
`)},
	{name: "registries.conf mirror removed", base: registriesFile(registriesBase), mutate: registriesFile(strings.Split(registriesBase, "  [[registry.mirror]]")[0])},
	{name: "registries.conf tag mirror added", base: registriesFile(registriesBase), mutate: registriesFile(registriesBase + `
  [[registry.mirror]]
    location = "mirror-b.example.com"
`)},
	{name: "registries.conf comment only", base: registriesFile(registriesBase), mutate: registriesFile("# a comment\n" + registriesBase)},
	{name: "registries.conf blocked registry added", base: registriesFile(registriesBase), mutate: registriesFile(registriesBase + `
[[registry]]
  location = "bad.example.com"
  blocked = true
`)},
	{name: "registries.conf search registry removed", base: registriesFile(registriesBase), mutate: registriesFile(strings.Replace(registriesBase, `, "docker.io"`, "", 1))},
	{name: "registries.conf, policy replaces Special", mcop: chronyPolicy, base: registriesFile(registriesBase), mutate: registriesFile(strings.Split(registriesBase, "  [[registry.mirror]]")[0])},
	{name: "registries.conf gzip", base: registriesFile(registriesBase), mutate: func(t *testing.T, mc map[string]any) {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write([]byte(registriesBase + "\n# x\n"))
		_ = zw.Close()
		putFile(mc, map[string]any{"path": "/etc/containers/registries.conf", "mode": 420, "overwrite": true, "contents": map[string]any{
			"compression": "gzip", "source": "data:;base64," + base64.StdEncoding.EncodeToString(b.Bytes())}})
	}},
	{name: "kernel argument added", mutate: func(t *testing.T, mc map[string]any) {
		spec(mc)["kernelArguments"] = []any{"nosmt"}
	}},
	{name: "kernel arguments reordered", base: func(t *testing.T, mc map[string]any) {
		spec(mc)["kernelArguments"] = []any{"a", "b"}
	}, mutate: func(t *testing.T, mc map[string]any) {
		spec(mc)["kernelArguments"] = []any{"b", "a"}
	}},
	{name: "kernel arguments nil to empty", base: func(t *testing.T, mc map[string]any) {
		delete(spec(mc), "kernelArguments")
	}, mutate: func(t *testing.T, mc map[string]any) {
		spec(mc)["kernelArguments"] = []any{}
	}},
	{name: "osImageURL changed", mutate: func(t *testing.T, mc map[string]any) {
		spec(mc)["osImageURL"] = "quay.io/example/os@sha256:0000000000000000000000000000000000000000000000000000000000000000"
	}},
	{name: "kernelType realtime", mutate: func(t *testing.T, mc map[string]any) { spec(mc)["kernelType"] = "realtime" }},
	{name: "kernelType default spelled out", mutate: func(t *testing.T, mc map[string]any) { spec(mc)["kernelType"] = "default" }},
	{name: "ssh key added", mutate: func(t *testing.T, mc map[string]any) {
		u := sub(ign(mc), "passwd")["users"].([]any)[0].(map[string]any)
		u["sshAuthorizedKeys"] = append(u["sshAuthorizedKeys"].([]any), "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample test@example")
	}},
	{name: "ssh key added, drain policy", mcop: chronyPolicy, mutate: func(t *testing.T, mc map[string]any) {
		u := sub(ign(mc), "passwd")["users"].([]any)[0].(map[string]any)
		u["sshAuthorizedKeys"] = append(u["sshAuthorizedKeys"].([]any), "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample test@example")
	}},
	{name: "non-core user added", mutate: func(t *testing.T, mc map[string]any) {
		p := sub(ign(mc), "passwd")
		p["users"] = append(p["users"].([]any), map[string]any{"name": "admin", "sshAuthorizedKeys": []any{"ssh-ed25519 AAAA x"}})
	}},
	{name: "core user gets a shell", mutate: func(t *testing.T, mc map[string]any) {
		sub(ign(mc), "passwd")["users"].([]any)[0].(map[string]any)["shell"] = "/bin/zsh"
	}},
	{name: "unit changed", mutate: func(t *testing.T, mc map[string]any) {
		u := units(mc)[0].(map[string]any)
		u["contents"] = fmt.Sprint(u["contents"]) + "\n# changed\n"
	}},
	{name: "kubelet unit changed, policy", mcop: chronyPolicy, mutate: func(t *testing.T, mc map[string]any) {
		for _, e := range units(mc) {
			if u := e.(map[string]any); u["name"] == "kubelet.service" {
				u["contents"] = fmt.Sprint(u["contents"]) + "\n# changed\n"
			}
		}
	}},
	{name: "file order only", mutate: func(t *testing.T, mc map[string]any) {
		l := files(mc)
		l[0], l[1] = l[1], l[0]
	}},
	{name: "file removed", mutate: func(t *testing.T, mc map[string]any) { dropFile(mc, "/etc/containers/policy.json") }},
	{name: "file mode setuid", mutate: func(t *testing.T, mc map[string]any) {
		files(mc)[0].(map[string]any)["mode"] = 0o4755
	}},
	{name: "new directory", mutate: func(t *testing.T, mc map[string]any) {
		sub(ign(mc), "storage")["directories"] = []any{map[string]any{"path": "/etc/new", "mode": 493}}
	}},
	{name: "empty directories list", mutate: func(t *testing.T, mc map[string]any) {
		sub(ign(mc), "storage")["directories"] = []any{}
	}},
	{name: "fips", mutate: func(t *testing.T, mc map[string]any) { spec(mc)["fips"] = true }},
	{name: "disk added", mutate: addDisk},
	{name: "disk added, override", mcop: disksOverride, mutate: addDisk},
	{name: "force file written", mutate: func(t *testing.T, mc map[string]any) {
		putFile(mc, fileEntry("/run/machine-config-daemon-force", ""))
	}},
	{name: "registries.conf removed", mutate: func(t *testing.T, mc map[string]any) { dropFile(mc, "/etc/containers/registries.conf") }},
	{name: "registries.conf compression key dropped", mutate: func(t *testing.T, mc map[string]any) {
		for _, e := range files(mc) {
			if f := e.(map[string]any); f["path"] == "/etc/containers/registries.conf" {
				delete(f["contents"].(map[string]any), "compression")
			}
		}
	}},
	{name: "unit dropin added", mutate: func(t *testing.T, mc map[string]any) {
		for _, e := range units(mc) {
			if u := e.(map[string]any); u["name"] == "kubelet.service" {
				u["dropins"] = append(asList(u["dropins"]), map[string]any{"name": "99-x.conf", "contents": "[Service]\n"})
			}
		}
	}},
	{name: "unit masked", mutate: func(t *testing.T, mc map[string]any) {
		sub(ign(mc), "systemd")["units"] = append(units(mc), map[string]any{"name": "rpcbind.service", "mask": true})
	}},
	{name: "core user removed", mutate: func(t *testing.T, mc map[string]any) { delete(ign(mc), "passwd") }},
	{name: "core user loses its keys", mutate: func(t *testing.T, mc map[string]any) {
		sub(ign(mc), "passwd")["users"] = []any{map[string]any{"name": "core"}}
	}},
	{name: "ignition kernel argument", mutate: func(t *testing.T, mc map[string]any) {
		ign(mc)["kernelArguments"] = map[string]any{"shouldExist": []any{"nosmt"}}
	}},
	{name: "link added", mutate: func(t *testing.T, mc map[string]any) {
		sub(ign(mc), "storage")["links"] = []any{map[string]any{"path": "/etc/l", "target": "/etc/x"}}
	}},
	{name: "link removed", base: func(t *testing.T, mc map[string]any) {
		sub(ign(mc), "storage")["links"] = []any{map[string]any{"path": "/etc/l", "target": "/etc/x"}}
	}, mutate: func(t *testing.T, mc map[string]any) { delete(sub(ign(mc), "storage"), "links") }},
	{name: "extension added", mutate: func(t *testing.T, mc map[string]any) { spec(mc)["extensions"] = []any{"usbguard"} }},
	{name: "two files, one without policy", mutate: func(t *testing.T, mc map[string]any) {
		putFile(mc, fileEntry("/etc/containers/policy.json", `{"default":[{"type":"reject"}]}`))
		putFile(mc, fileEntry("/etc/app.conf", "x"))
	}},
	{name: "directory policies and a registries.conf Drain", mcop: dirPolicies, base: registriesFile(registriesBase), mutate: func(t *testing.T, mc map[string]any) {
		registriesFile("# c\n"+registriesBase)(t, mc)
		putFile(mc, fileEntry("/etc/app/conf.d/a.conf", "x"))
		putFile(mc, fileEntry("/etc/app/certs/a.crt", "x"))
		putFile(mc, fileEntry("/etc/containers/registries.d/x.yaml", "x: 1"))
	}},
	{name: "registries.conf TOML 1.1 escape", base: registriesFile(registriesBase), mutate: registriesFile(registriesBase + "\n[aliases]\n\"x\" = \"quay.io/\\x41\"\n")},
	{name: "registries.conf TOML 1.1 inline table", base: registriesFile(registriesBase), mutate: registriesFile("aliases = { \"x\" = \"quay.io/x\",\n  \"y\" = \"quay.io/y\" }\n" + registriesBase)},
	{name: "registries.conf TOML 1.0 inline table", base: registriesFile(registriesBase), mutate: registriesFile("aliases = { \"x\" = \"quay.io/x\", \"y\" = \"quay.io/y\" }\n" + registriesBase)},
	{name: "registries.conf time without seconds", base: registriesFile(registriesBase), mutate: registriesFile("when = 07:32\n" + registriesBase)},
	{name: "ssh policy Reboot", mcop: dirPolicies, mutate: func(t *testing.T, mc map[string]any) {
		sub(ign(mc), "passwd")["users"].([]any)[0].(map[string]any)["passwordHash"] = "$6$x"
	}},
}

// dirPolicies are entries for directories (with and without a trailing
// slash) and one nested in another.
var dirPolicies = string(builder.MachineConfiguration().
	WithFileActions("/etc/containers/registries.conf", "Drain").
	WithFileActions("/etc/containers/registries.d/", "Restart crio.service").
	WithFileActions("/etc/app", "DaemonReload", "Restart app.service").
	WithFileActions("/etc/app/certs/", "Restart app-certs.service").
	WithSSHKeyActions("Reboot").Document())

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func addDisk(t *testing.T, mc map[string]any) {
	sub(ign(mc), "storage")["disks"] = []any{map[string]any{"device": "/dev/sdb", "wipeTable": true}}
}

func registriesFile(contents string) func(t *testing.T, mc map[string]any) {
	return func(t *testing.T, mc map[string]any) {
		putFile(mc, map[string]any{"path": "/etc/containers/registries.conf", "mode": 420, "overwrite": true, "contents": map[string]any{
			"compression": "", "source": dataURL(contents)}})
	}
}

// TestHandEditsAgreeWithMCO: one-change edits of a real 4.16 worker config,
// with and without a MachineConfiguration, decided by ndp and by the MCO.
func TestHandEditsAgreeWithMCO(t *testing.T) {
	ref := mcoRef(t)
	base, err := filepath.Glob(filepath.Join(ref, "realconfigs", "4.16.0-compact", "rendered-worker-*.yaml"))
	if err != nil || len(base) != 1 {
		t.Fatalf("the 4.16 compact worker config: %v %v", base, err)
	}
	raw, err := os.ReadFile(base[0])
	if err != nil {
		t.Fatal(err)
	}
	load := func() map[string]any {
		var mc map[string]any
		if err := yaml.Unmarshal(raw, &mc); err != nil {
			t.Fatal(err)
		}
		return mc
	}
	dir := t.TempDir()
	write := func(name string, v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	outcomes := map[string]int{}
	for i, e := range handEdits {
		from, to := load(), load()
		if e.base != nil {
			e.base(t, from)
			e.base(t, to)
		}
		from["metadata"].(map[string]any)["name"] = "rendered-worker-old"
		to["metadata"].(map[string]any)["name"] = "rendered-worker-new"
		e.mutate(t, to)
		fp, tp := write(fmt.Sprintf("%02d-old.json", i), from), write(fmt.Sprintf("%02d-new.json", i), to)
		mcop := ""
		if e.mcop != "" {
			mcop = filepath.Join(dir, fmt.Sprintf("%02d-mcop.yaml", i))
			if err := os.WriteFile(mcop, []byte(e.mcop), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		s := compare(t, ref, fp, tp, mcop)
		t.Logf("%-45s %s", e.name, s)
		outcomes[s]++
		// and back
		compare(t, ref, tp, fp, mcop)
	}
	if len(outcomes) < 8 {
		t.Errorf("the edits gave only %d distinct MCO outcomes: %v", len(outcomes), outcomes)
	}
}

// A node without a config (From nil) is the MCO's empty config.
func TestEmptyFromAgreesWithMCO(t *testing.T) {
	ref := mcoRef(t)
	to, _ := filepath.Glob(filepath.Join(ref, "realconfigs", "4.16.0-compact", "rendered-worker-*.yaml"))
	if len(to) != 1 {
		t.Fatalf("the 4.16 compact worker config: %v", to)
	}
	want := runMCODecide(t, ref, "-empty-", to[0], "")
	got, err := mcorules.Decide(mcorules.Input{To: testkit.ReadConfig(t, to[0]), Policies: mcorules.Defaults()})
	if err != nil {
		t.Fatal(err)
	}
	if want.Reconcilable != (len(got.Refused) == 0) || want.Reboot != got.Reboot || want.Drain != got.Drain ||
		!slices.Equal(want.ChangedFiles, got.ChangedFiles) || !slices.Equal(want.ChangedUnits, got.ChangedUnits) || want.SSHChanged != got.SSHChanged {
		t.Errorf("MCO %+v\nndp %+v", want, got)
	}
}
