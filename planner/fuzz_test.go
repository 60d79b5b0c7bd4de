package planner_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/changeset"
	"github.com/ndp-dev/ndp/planner/oracle"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/registries"
)

// addDiffSeeds seeds FuzzDiff with the shipped examples (YAML as written,
// and the JSON the API server returns), each pair both ways and each
// config against itself, plus small configs for the encodings and fields
// the examples do not show.
func addDiffSeeds(f *testing.F) {
	pairs, err := filepath.Glob("../examples/machineconfigs/*/old.yaml")
	if err != nil || len(pairs) == 0 {
		f.Fatalf("no example MachineConfigs: %v", err)
	}
	for _, oldPath := range pairs {
		oldDoc, err := os.ReadFile(oldPath)
		if err != nil {
			f.Fatal(err)
		}
		newDoc, err := os.ReadFile(filepath.Join(filepath.Dir(oldPath), "new.yaml"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(oldDoc, newDoc)
		f.Add(newDoc, oldDoc)
		f.Add(newDoc, newDoc)
		oldJSON, err1 := yaml.YAMLToJSON(oldDoc)
		newJSON, err2 := yaml.YAMLToJSON(newDoc)
		if err := errors.Join(err1, err2); err != nil {
			f.Fatal(err)
		}
		f.Add(oldJSON, newJSON)
	}
	const registriesOld = "unqualified-search-registries = [\"registry.access.redhat.com\", \"docker.io\"]\n"
	const registriesNew = registriesOld + "\n[[registry]]\n  prefix = \"\"\n  location = \"quay.io/acme\"\n\n  [[registry.mirror]]\n    location = \"m.example.com/acme\"\n    pull-from-mirror = \"digest-only\"\n"
	small := []struct{ old, new []byte }{
		{builder.MachineConfig("rendered-worker-1").Document(), builder.MachineConfig("rendered-worker-2").WithIgnitionVersion("3.5.0").Document()},
		{builder.MachineConfig("rendered-worker-1").WithFiles(builder.File(registries.ConfPath, registriesOld)).Document(),
			builder.MachineConfig("rendered-worker-2").WithFiles(builder.FileB64(registries.ConfPath, registriesNew)).Document()},
		{builder.MachineConfig("rendered-worker-1").WithFiles(builder.File("/etc/chrony.conf", "pool a")).WithSpecFields(map[string]any{"kernelType": "default"}).Document(),
			builder.MachineConfig("rendered-worker-2").WithFiles(builder.FileGzip("/etc/chrony.conf", "pool b").With("mode", 0o600), builder.File("/etc/app/x", "y").With("user", map[string]any{"name": "core"})).WithSpecFields(map[string]any{"kernelArguments": []string{"nosmt"}, "extensions": []string{"usbguard"}, "kernelType": "realtime"}).Document()},
		{builder.MachineConfig("rendered-worker-1").WithConfig(map[string]any{"systemd": map[string]any{"units": []any{
			map[string]any{"name": "a.service", "enabled": true, "contents": "[Service]\n", "dropins": []any{map[string]any{"name": "10-a.conf", "contents": "x"}}}}}}).Document(),
			builder.MachineConfig("rendered-worker-2").WithConfig(map[string]any{"systemd": map[string]any{"units": []any{
				map[string]any{"name": "a.service", "mask": true}, map[string]any{"name": "b.service", "enabled": false}}},
				"passwd": map[string]any{"users": []any{map[string]any{"name": "core", "sshAuthorizedKeys": []string{"ssh-ed25519 AAAA a"}, "passwordHash": "$6$x"}}}}).Document()},
		{builder.MachineConfig("rendered-worker-1").WithFiles(map[string]any{"path": "/etc/remote", "contents": map[string]any{"source": "https://example.com/a",
			"httpHeaders": []any{map[string]any{"name": "X", "value": "y"}}}}).Document(),
			builder.MachineConfig("rendered-worker-2").WithFiles(map[string]any{"path": "/etc/remote", "contents": map[string]any{"source": "https://example.com/a",
				"verification": map[string]any{"hash": "sha512-" + strings.Repeat("0", 128)}}}).Document()},
	}
	for _, s := range small {
		f.Add(s.old, s.new)
	}
	f.Add([]byte("{}"), []byte("kind: MachineConfig\n"))
}

// FuzzDiff parses two arbitrary MachineConfig documents as the CLI, the
// controllers and the webhook do, and plans the move from one to the other
// with the default policy. Beyond not panicking: bad input is an
// InputError naming the document; a config diffed with itself is no
// change and plans [None]; the diff is deterministic and symmetric (what
// is added one way is removed the other); the plan is well formed (its
// actions pass PostConfigActions.Validate, its planHash verifies), and it
// is the plan of the plain-Go oracle of the default policy.
func FuzzDiff(f *testing.F) {
	addDiffSeeds(f)
	p := sharedPlanner(f)
	f.Fuzz(func(t *testing.T, oldDoc, newDoc []byte) {
		from, errFrom := machineconfig.Parse("old.yaml", oldDoc)
		checkInputError(t, "old.yaml", errFrom)
		to, errTo := machineconfig.Parse("new.yaml", newDoc)
		checkInputError(t, "new.yaml", errTo)
		for _, cfg := range []*machineconfig.Config{from, to} {
			if cfg != nil {
				checkNoChange(t, p, cfg)
			}
		}
		if errFrom != nil || errTo != nil {
			return
		}
		cs, err := changeset.Diff(from, to)
		if err != nil {
			checkInputError(t, "", err)
			if _, perr := p.Plan(context.Background(), planner.Request{From: from, To: to}); perr == nil || perr.Error() != err.Error() {
				t.Fatalf("Diff fails with %v, but Plan with %v", err, perr)
			}
			return
		}
		if again, err := changeset.Diff(from, to); err != nil || !reflect.DeepEqual(cs, again) {
			t.Fatalf("Diff is not deterministic: %v\n%+v\n%+v", err, cs, again)
		}
		if rev, err := changeset.Diff(to, from); err == nil {
			checkSymmetric(t, cs, rev)
		}
		pl, err := p.Plan(context.Background(), planner.Request{From: from, To: to})
		if err != nil {
			t.Fatalf("the default policy fails on a change set Diff computed: %v", err)
		}
		checkPlan(t, pl, cs, from.Name, to.Name)
		if len(cs.Unreconcilable) == 0 {
			actions, drain, reboot := oracle.Plan(cs)
			if !reflect.DeepEqual(pl.Actions, actions) || pl.Drain != drain || pl.Reboot != reboot {
				t.Fatalf("the Rego planner and the oracle disagree:\nrego:   %s drain %t reboot %t\noracle: %s drain %t reboot %t\nchange set: %+v",
					actionsString(pl.Actions), pl.Drain, pl.Reboot, actionsString(actions), drain, reboot, cs)
			}
		}
	})
}

// checkInputError: a refused document is an InputError that names it.
func checkInputError(t *testing.T, origin string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var ie *machineconfig.InputError
	if !errors.As(err, &ie) {
		t.Fatalf("error %T is not an InputError: %v", err, err)
	}
	if ie.Object == "" || ie.Err == nil || (origin != "" && !strings.HasPrefix(ie.Object, origin)) {
		t.Fatalf("the InputError does not name the document %s: %#v", origin, ie)
	}
}

// checkNoChange: a config moved to itself changes nothing.
func checkNoChange(t *testing.T, p *planner.Planner, cfg *machineconfig.Config) {
	t.Helper()
	cs, err := changeset.Diff(cfg, cfg)
	if err != nil {
		t.Fatalf("diff of %s with itself: %v", cfg.Name, err)
	}
	if len(cs.Changes) > 0 || len(cs.Unreconcilable) > 0 || cs.Registries != nil {
		t.Fatalf("diff of %s with itself is not empty: %+v", cfg.Name, cs)
	}
	pl, err := p.Plan(context.Background(), planner.Request{From: cfg, To: cfg})
	if err != nil {
		t.Fatalf("plan of %s to itself: %v", cfg.Name, err)
	}
	if len(pl.Actions) != 1 || pl.Actions[0].Type != policy.ActionNone || pl.Drain || pl.Reboot {
		t.Fatalf("plan of %s to itself: %+v", cfg.Name, pl)
	}
	checkPlan(t, pl, cs, cfg.Name, cfg.Name)
}

// checkSymmetric: the change ids of a→b and b→a are the same, with added
// and removed swapped.
func checkSymmetric(t *testing.T, fwd, rev *changeset.ChangeSet) {
	t.Helper()
	flip := map[string]string{changeset.OpAdded: changeset.OpRemoved, changeset.OpRemoved: changeset.OpAdded, changeset.OpChanged: changeset.OpChanged}
	ops := func(cs *changeset.ChangeSet, swap bool) []string {
		var out []string
		for _, c := range cs.Changes {
			op := c.Op
			if swap {
				op = flip[op]
			}
			out = append(out, c.ID+" "+op)
		}
		slices.Sort(out)
		return out
	}
	if a, b := ops(fwd, false), ops(rev, true); !slices.Equal(a, b) {
		t.Fatalf("the diff is not symmetric:\n a→b: %q\n b→a (flipped): %q", a, b)
	}
}

// checkPlan: a plan is what the daemon accepts: its hash verifies for the
// move to its target and its actions pass Validate; an unreconcilable
// change set gets no actions at all.
func checkPlan(t *testing.T, pl *planner.Plan, cs *changeset.ChangeSet, fromName, toName string) {
	t.Helper()
	if pl.From != fromName || pl.To != toName {
		t.Fatalf("plan from %q to %q, want %q to %q", pl.From, pl.To, fromName, toName)
	}
	pca := pl.PostConfigActions()
	if h := pca.Hash(toName); h != pl.PlanHash {
		t.Fatalf("planHash %s, but the plan hashes to %s", pl.PlanHash, h)
	}
	if len(cs.Unreconcilable) > 0 {
		if len(pl.Unreconcilable) == 0 || len(pl.Actions) != 0 || pl.Drain || pl.Reboot {
			t.Fatalf("an unreconcilable change set was planned: %+v", pl)
		}
		return
	}
	if err := pca.Verify(toName); err != nil {
		t.Fatalf("the daemon would refuse the plan: %v\nplan: %+v", err, pl)
	}
	if len(pl.Reasons) < len(cs.Changes) {
		t.Fatalf("%d changes but %d reasons", len(cs.Changes), len(pl.Reasons))
	}
	for _, r := range pl.Reasons {
		if r.Policy == planner.NoPolicy && !pl.Reboot {
			t.Fatalf("an unclaimed change (%s) did not give a reboot: %+v", r.Change, pl)
		}
	}
	if pl.Reboot && !pl.Drain {
		t.Fatalf("a reboot without a drain on a multi-node cluster: %+v", pl)
	}
}
