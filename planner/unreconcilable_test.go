package planner_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/internal/testkit/policytest"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/changeset"
)

// diffAndPlan is the change set from → to and its plan with the default
// policy.
func diffAndPlan(t *testing.T, from, to *machineconfig.Config) (*changeset.ChangeSet, *planner.Plan) {
	t.Helper()
	cs, err := changeset.Diff(from, to)
	if err != nil {
		t.Fatal(err)
	}
	return cs, plan(t, policytest.Planner(t), from, to)
}

func TestUnreconcilable(t *testing.T) {
	storage := func(k string, v any) map[string]any { return map[string]any{"storage": map[string]any{k: v}} }
	users := func(us ...any) map[string]any { return map[string]any{"passwd": map[string]any{"users": us}} }
	for _, tc := range []struct {
		name      string
		old, new  map[string]any
		oldSpec   map[string]any
		newSpec   map[string]any
		wantField []string
	}{
		{name: "disk added", new: storage("disks", []any{map[string]any{"device": "/dev/vdb", "wipeTable": true}}), wantField: []string{"spec.config.storage.disks"}},
		{name: "filesystem added", new: storage("filesystems", []any{map[string]any{"device": "/dev/vdb1", "format": "xfs", "path": "/var/lib/containers"}}), wantField: []string{"spec.config.storage.filesystems"}},
		{name: "raid added", new: storage("raid", []any{map[string]any{"name": "md0", "level": "raid1", "devices": []any{"/dev/vdb", "/dev/vdc"}}}), wantField: []string{"spec.config.storage.raid"}},
		{name: "directory added", new: storage("directories", []any{map[string]any{"path": "/var/lib/app"}}), wantField: []string{"spec.config.storage.directories"}},
		{name: "link added", new: storage("links", []any{map[string]any{"path": "/etc/l", "target": "/etc/t"}}), wantField: []string{"spec.config.storage.links[path=/etc/l]"}},
		{name: "link unchanged", old: storage("links", []any{map[string]any{"path": "/etc/l", "target": "/etc/t"}}), new: storage("links", []any{map[string]any{"path": "/etc/l", "target": "/etc/t"}})},
		{name: "append", new: builder.Ignition().WithFiles(builder.File("/etc/a", "").With("append", []any{map[string]any{"source": "data:,x"}})).Build(), wantField: []string{"spec.config.storage.files[path=/etc/a].append"}},
		{name: "group added", new: map[string]any{"passwd": map[string]any{"groups": []any{map[string]any{"name": "g"}}}}, wantField: []string{"spec.config.passwd.groups"}},
		{name: "user added", new: users(map[string]any{"name": "alice"}), wantField: []string{"spec.config.passwd.users[name=alice]"}},
		{name: "core shell changed", old: users(map[string]any{"name": "core"}), new: users(map[string]any{"name": "core", "shell": "/bin/zsh"}), wantField: []string{"spec.config.passwd.users[name=core]"}},
		{name: "core keys changed", old: users(map[string]any{"name": "core"}), new: users(map[string]any{"name": "core", "sshAuthorizedKeys": []any{"ssh-ed25519 AAAA k"}})},
		// The node daemon's own control files, as the MCO refuses its own.
		{name: "MCO force file", new: builder.Ignition().WithFiles(builder.File("/run/machine-config-daemon-force", "")).Build(), wantField: []string{"spec.config.storage.files[path=/run/machine-config-daemon-force]"}},
		{name: "ndp journal", new: builder.Ignition().WithFiles(builder.File("/etc/ndp/journal.json", "{}")).Build(), wantField: []string{"spec.config.storage.files[path=/etc/ndp/journal.json]"}},
		{name: "ndp state dir", new: builder.Ignition().WithFiles(builder.File("/etc/ndp/x/y", "")).Build(), wantField: []string{"spec.config.storage.files[path=/etc/ndp/x/y]"}},
		{name: "control file dropped", old: builder.Ignition().WithFiles(builder.File("/etc/ndp/currentconfig.json", "{}")).Build(), wantField: []string{"spec.config.storage.files[path=/etc/ndp/currentconfig.json]"}},
		{name: "a sibling of the state dir is an ordinary file", new: builder.Ignition().WithFiles(builder.File("/etc/ndp2/x", ""), builder.File("/run/machine-config-daemon-force2", "")).Build()},
		// The core user left with no way to log in.
		{name: "core loses its last key", old: users(map[string]any{"name": "core", "sshAuthorizedKeys": []any{"ssh-ed25519 AAAA k"}}), new: users(map[string]any{"name": "core"}),
			wantField: []string{"spec.config.passwd.users[name=core]"}},
		{name: "core dropped with its keys", old: users(map[string]any{"name": "core", "sshAuthorizedKeys": []any{"ssh-ed25519 AAAA k"}}),
			wantField: []string{"spec.config.passwd.users[name=core]"}},
		{name: "core loses its password hash, the last credential", old: users(map[string]any{"name": "core", "passwordHash": "$6$x"}), new: users(map[string]any{"name": "core", "sshAuthorizedKeys": []any{}}),
			wantField: []string{"spec.config.passwd.users[name=core]"}},
		{name: "core trades its keys for a password hash", old: users(map[string]any{"name": "core", "sshAuthorizedKeys": []any{"ssh-ed25519 AAAA k"}}), new: users(map[string]any{"name": "core", "passwordHash": "$6$x"})},
		{name: "core keeps one key of two", old: users(map[string]any{"name": "core", "sshAuthorizedKeys": []any{"ssh-ed25519 AAAA k", "ssh-ed25519 BBBB l"}}), new: users(map[string]any{"name": "core", "sshAuthorizedKeys": []any{"ssh-ed25519 BBBB l"}})},
		{name: "core never had a way in: nothing is taken away", new: users(map[string]any{"name": "core"})},
		{name: "Ignition kernel arguments", new: map[string]any{"kernelArguments": map[string]any{"shouldExist": []any{"nosmt"}}}, wantField: []string{"spec.config.kernelArguments"}},
		{name: "fips", newSpec: map[string]any{"fips": true}, wantField: []string{"spec.fips"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, p := diffAndPlan(t, builder.MachineConfig("old").WithConfig(tc.old).WithSpecFields(tc.oldSpec).Config(t), builder.MachineConfig("new").WithConfig(tc.new).WithSpecFields(tc.newSpec).Config(t))
			var got []string
			for _, u := range cs.Unreconcilable {
				got = append(got, u.Field)
				if u.Reason == "" {
					t.Errorf("%s has no reason", u.Field)
				}
			}
			if d := cmp.Diff(tc.wantField, got); d != "" {
				t.Errorf("unreconcilable fields (-want +got):\n%s", d)
			}
			if (len(p.Unreconcilable) > 0) != (len(tc.wantField) > 0) || (len(tc.wantField) > 0 && len(p.Actions) != 0) {
				t.Errorf("plan of an unreconcilable change must have no actions: %+v", p)
			}
		})
	}
}

// LUKS (and its Tang/TPM bindings) only takes effect when a node is
// provisioned; the MCO accepts the change and does nothing, and so does the
// default policy, saying why.
func TestLUKSIsPlannedNone(t *testing.T) {
	luks := func(volumes ...any) map[string]any {
		return map[string]any{"storage": map[string]any{"luks": volumes}}
	}
	root := map[string]any{"name": "root", "device": "/dev/disk/by-partlabel/root", "clevis": map[string]any{"tang": []any{map[string]any{"url": "http://tang.example.com", "thumbprint": "abc"}}}}
	root2 := map[string]any{"name": "root", "device": "/dev/disk/by-partlabel/root", "clevis": map[string]any{"tang": []any{map[string]any{"url": "http://tang2.example.com", "thumbprint": "def"}}}}
	data := map[string]any{"name": "data", "device": "/dev/vdb"}
	for _, tc := range []struct {
		name               string
		old, new           map[string]any
		op, added, removed string
	}{
		{"added", nil, luks(root), "added", "root", ""},
		{"Tang server changed, a volume added", luks(root), luks(root2, data), "changed", "data,root", ""},
		{"a volume removed", luks(root, data), luks(root), "changed", "", "data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from, to := builder.MachineConfig("old").WithConfig(tc.old).Config(t), builder.MachineConfig("new").WithConfig(tc.new).Config(t)
			cs, p := diffAndPlan(t, from, to)
			if len(cs.Unreconcilable) != 0 || len(cs.Changes) != 1 {
				t.Fatalf("want one change, nothing unreconcilable: %+v", cs)
			}
			c := cs.Changes[0]
			if c.ID != "storage:luks" || c.Kind != "storage" || c.Op != tc.op || strings.Join(c.Added, ",") != tc.added || strings.Join(c.Removed, ",") != tc.removed {
				t.Errorf("change = %+v", c)
			}
			if s := actionsString(p.Actions); s != `[{"type":"None"}]` || p.Drain || p.Reboot {
				t.Errorf("plan = %s drain %t reboot %t, want None", s, p.Drain, p.Reboot)
			}
			if len(p.Reasons) != 1 || p.Reasons[0].Policy != "default" || !strings.Contains(p.Reasons[0].Detail, "provisioned") || p.Reasons[0].Change != "storage.luks: "+tc.op {
				t.Errorf("reasons = %+v", p.Reasons)
			}
		})
	}
}
