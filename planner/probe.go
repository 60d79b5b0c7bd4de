package planner

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/planner/changeset"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/registries"
)

// Probe evaluates the policy set on the synthetic change set. A failure is
// an error as Evaluate returns it; when the sandbox stops the evaluation,
// the error names the first of candidates (the policies being added or
// changed), since the rest of the set passed the probe before.
func (p *Planner) Probe(ctx context.Context, candidates ...string) error {
	cs, err := probeChangeSet(p.Engine.Literals(candidates))
	if err != nil {
		return fmt.Errorf("building the probe change set: %w", err)
	}
	suspect := ""
	if len(candidates) > 0 {
		suspect = candidates[0]
	}
	_, err = p.Engine.EvaluateNaming(ctx, cs, suspect)
	return err
}

// The fixed part of the probe: one change of every kind, computed once by
// diffing two synthetic rendered configs.
var (
	probeOnce sync.Once
	probeBase *changeset.ChangeSet
	probeErr  error
)

const probeRegistriesOld = `unqualified-search-registries = ["registry.access.redhat.com"]
short-name-mode = ""
`

const probeRegistriesNew = `unqualified-search-registries = ["registry.access.redhat.com", "docker.io"]
short-name-mode = ""

[[registry]]
  prefix = ""
  location = "quay.io/ndp"

  [[registry.mirror]]
    location = "mirror.example.com/ndp"
    pull-from-mirror = "digest-only"
`

// The probe's changed files carry contents, so that rules reading them
// (change.diff, change.new.data) run: a parsed document whose diff has
// changed, added and removed leaves, a change of type and of format (JSON
// to YAML), and, in changed.txt, lines added and removed.
const (
	probeDocOld = `{"probe": "old", "maxPods": 250, "list": [1, 2], "nested": {"a": 1, "b": "x"}, "typed": [1], "gone": true}`
	probeDocNew = "probe: new\nmaxPods: 500\nlist: [1, 2, 3]\nnested:\n  a: 1\n  c: [true]\ntyped: {k: v}\nadded: null\n"
)

func probeConfigs() (from, to map[string]any) {
	file := func(p, contents string, mode int) map[string]any {
		return map[string]any{"path": p, "mode": mode, "overwrite": true, "contents": map[string]any{"source": "data:," + url.PathEscape(contents)}}
	}
	user := func(key, hash string) map[string]any {
		return map[string]any{"passwd": map[string]any{"users": []any{map[string]any{"name": "core", "sshAuthorizedKeys": []any{key}, "passwordHash": hash}}}}
	}
	mc := func(name string, ign map[string]any, spec map[string]any) map[string]any {
		ign["ignition"] = map[string]any{"version": "3.4.0"}
		spec["config"] = ign
		return map[string]any{"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig", "metadata": map[string]any{"name": name}, "spec": spec}
	}
	unit := func(contents, dropin string) map[string]any {
		u := map[string]any{"name": "ndp-probe.service", "enabled": true, "contents": contents}
		if dropin != "" {
			u["dropins"] = []any{map[string]any{"name": "10-ndp-probe.conf", "contents": dropin}}
		}
		return u
	}
	fromIgn := user("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIProbeOld probe@ndp", "$6$old")
	fromIgn["storage"] = map[string]any{"files": []any{
		file("/etc/ndp-probe/changed.conf", probeDocOld, 0o644),
		file("/etc/ndp-probe/changed.txt", "# probe\nold line\n", 0o644),
		file("/etc/ndp-probe/removed.conf", "old", 0o644),
		file(registries.ConfPath, probeRegistriesOld, 0o644),
	}}
	fromIgn["systemd"] = map[string]any{"units": []any{unit("[Unit]\nDescription=old\n", "")}}
	toIgn := user("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIProbeNew probe@ndp", "$6$new")
	toIgn["storage"] = map[string]any{"files": []any{
		file("/etc/ndp-probe/changed.conf", probeDocNew, 0o600),
		file("/etc/ndp-probe/changed.txt", "# probe\nnew line\nadded line\n", 0o644),
		file("/etc/ndp-probe/added.conf", "new", 0o644),
		file(registries.ConfPath, probeRegistriesNew, 0o644),
	}, "luks": []any{map[string]any{"name": "ndp-probe", "device": "/dev/disk/by-partlabel/ndp-probe"}}}
	toIgn["systemd"] = map[string]any{"units": []any{unit("[Unit]\nDescription=new\n", "[Service]\nEnvironment=NDP=probe\n")}}
	from = mc("rendered-ndp-probe-old", fromIgn, map[string]any{
		"osImageURL": "quay.io/ndp/probe@sha256:" + strings.Repeat("a", 64), "kernelArguments": []any{"ndp.probe=old"},
		"extensions": []any{"usbguard"}, "kernelType": "default",
		"baseOSExtensionsContainerImage": "quay.io/ndp/probe-ext@sha256:" + strings.Repeat("a", 64)})
	to = mc("rendered-ndp-probe-new", toIgn, map[string]any{
		"osImageURL": "quay.io/ndp/probe@sha256:" + strings.Repeat("b", 64), "kernelArguments": []any{"ndp.probe=new"},
		"extensions": []any{"kerberos"}, "kernelType": "realtime",
		"baseOSExtensionsContainerImage": "quay.io/ndp/probe-ext@sha256:" + strings.Repeat("b", 64)})
	return from, to
}

func probeBaseChangeSet() (*changeset.ChangeSet, error) {
	probeOnce.Do(func() {
		from, to := probeConfigs()
		var cfgs [2]*machineconfig.Config
		for i, doc := range []map[string]any{from, to} {
			b, err := json.Marshal(doc)
			if err == nil {
				cfgs[i], err = machineconfig.Parse("ndp probe", b)
			}
			if err != nil {
				probeErr = err
				return
			}
		}
		probeBase, probeErr = changeset.Diff(cfgs[0], cfgs[1])
		if probeErr == nil && len(probeBase.Unreconcilable) > 0 {
			probeErr = fmt.Errorf("the probe change set is unreconcilable: %v", probeBase.Unreconcilable)
		}
	})
	return probeBase, probeErr
}

// probeChangeSet is the fixed probe plus a changed file per path and a
// changed unit per unit name.
func probeChangeSet(paths, units []string) (*changeset.ChangeSet, error) {
	base, err := probeBaseChangeSet()
	if err != nil {
		return nil, err
	}
	cs := base.Copy()
	have := map[string]bool{}
	for _, c := range cs.Changes {
		have[c.ID] = true
	}
	for _, p := range paths {
		if id := "file:" + p; !have[id] {
			have[id] = true
			cs.Changes = append(cs.Changes, changeset.Change{ID: id, Kind: changeset.KindFile, Op: changeset.OpChanged, Path: p, Dirs: changeset.ParentDirs(p), Fields: []string{"contents"},
				OldDigest: "sha256:" + strings.Repeat("0", 64), NewDigest: "sha256:" + strings.Repeat("1", 64), Source: "ndp-probe"})
			// Whatever the format the policy expects at this path, the
			// data is what its rules read.
			cs.AttachContents(id, []byte(probeDocOld), []byte(probeDocNew))
		}
	}
	for _, u := range units {
		if id := "unit:" + u; !have[id] {
			have[id] = true
			cs.Changes = append(cs.Changes, changeset.Change{ID: id, Kind: changeset.KindUnit, Op: changeset.OpChanged, Name: u, Fields: []string{"contents"}, Source: "ndp-probe"})
		}
	}
	cs.Sort()
	return cs, nil
}

// CheckPolicy compiles pol alone, as the planner will compile it, and
// evaluates the probe change set within the sandbox's limits: what a policy
// must pass before it is packaged or admitted.
func CheckPolicy(pol policy.Policy) error {
	ctx := context.Background()
	e, err := engine.New(ctx, []policy.Policy{pol}, engine.Options{})
	if err != nil {
		return err
	}
	return (&Planner{Engine: e}).Probe(ctx, pol.Name)
}
