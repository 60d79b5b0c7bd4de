package planner_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

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
		{name: "append", new: files(with(file("/etc/a", ""), "append", []any{map[string]any{"source": "data:,x"}})), wantField: []string{"spec.config.storage.files[path=/etc/a].append"}},
		{name: "group added", new: map[string]any{"passwd": map[string]any{"groups": []any{map[string]any{"name": "g"}}}}, wantField: []string{"spec.config.passwd.groups"}},
		{name: "user added", new: users(map[string]any{"name": "alice"}), wantField: []string{"spec.config.passwd.users[name=alice]"}},
		{name: "core shell changed", old: users(map[string]any{"name": "core"}), new: users(map[string]any{"name": "core", "shell": "/bin/zsh"}), wantField: []string{"spec.config.passwd.users[name=core]"}},
		{name: "core keys changed", old: users(map[string]any{"name": "core"}), new: users(map[string]any{"name": "core", "sshAuthorizedKeys": []any{"ssh-ed25519 AAAA k"}})},
		{name: "Ignition kernel arguments", new: map[string]any{"kernelArguments": map[string]any{"shouldExist": []any{"nosmt"}}}, wantField: []string{"spec.config.kernelArguments"}},
		{name: "fips", newSpec: map[string]any{"fips": true}, wantField: []string{"spec.fips"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := diff(t, mc(t, "old", tc.old, tc.oldSpec), mc(t, "new", tc.new, tc.newSpec))
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
			p := plan(t, defaultPlanner(t), mc(t, "old", tc.old, tc.oldSpec), mc(t, "new", tc.new, tc.newSpec))
			if (len(p.Unreconcilable) > 0) != (len(tc.wantField) > 0) || (len(tc.wantField) > 0 && len(p.Actions) != 0) {
				t.Errorf("plan of an unreconcilable change must have no actions: %+v", p)
			}
		})
	}
}
