package planner

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
)

// A policy's tests may pass while its rules blow up on a real change: the
// probe evaluates a policy set, before it becomes active, on a synthetic
// change set under the same sandbox limits as planning. The change set has
// one change of every kind (a file added, changed and removed, a unit, the
// SSH keys, the password hash, every OS field, storage.luks, a registries.conf change
// with a semantic diff), plus a changed file for every absolute path, and a
// changed unit for every unit name, that the candidate policies' Rego
// mentions (at most maxProbeLiterals of each), so that rules keyed on one
// path run too. It costs one evaluation of a small change set.

// maxProbeLiterals bounds the changes made from a policy's literals.
const maxProbeLiterals = 32

// Probe evaluates the policy set on the synthetic change set. A failure is
// an error as Evaluate returns it; when the sandbox stops the evaluation,
// the error names the first of candidates (the policies being added or
// changed), since the rest of the set passed the probe before.
func (p *Planner) Probe(ctx context.Context, candidates ...string) error {
	cs, err := probeChangeSet(p.Engine.literals(candidates))
	if err != nil {
		return fmt.Errorf("building the probe change set: %w", err)
	}
	suspect := ""
	if len(candidates) > 0 {
		suspect = candidates[0]
	}
	_, err = p.Engine.evaluate(ctx, cs, suspect)
	return err
}

// literals collects the absolute paths and unit names in the Rego of the
// named policies.
func (e *Engine) literals(names []string) (paths, units []string) {
	seenPath, seenUnit := map[string]bool{}, map[string]bool{}
	for _, name := range names {
		p := e.policies[name]
		if p == nil {
			continue
		}
		own := map[*Module]bool{}
		for i := range p.Modules {
			own[&p.Modules[i]] = true
		}
		for key, m := range e.modules {
			mod := e.parsed[key]
			if mod == nil || !own[m] {
				continue
			}
			ast.WalkTerms(mod, func(t *ast.Term) bool {
				s, ok := t.Value.(ast.String)
				if !ok {
					return false
				}
				switch v := string(s); {
				case probePath(v) != "" && !seenPath[probePath(v)] && len(paths) < maxProbeLiterals:
					seenPath[probePath(v)] = true
					paths = append(paths, probePath(v))
				case len(v) <= MaxServiceName && serviceNamePattern.MatchString(v) && !seenUnit[v] && len(units) < maxProbeLiterals:
					seenUnit[v] = true
					units = append(units, v)
				}
				return false
			})
		}
	}
	sort.Strings(paths)
	sort.Strings(units)
	return paths, units
}

// probePath turns a literal into a file path to change: the literal if it
// is a clean absolute path, a file inside it if it names a directory.
func probePath(s string) string {
	if len(s) < 2 || len(s) > 255 || s[0] != '/' || strings.ContainsAny(s, " \t\n\"'\\*?[]{}$%") {
		return ""
	}
	if strings.HasSuffix(s, "/") {
		s += "ndp-probe"
	}
	if path.Clean(s) != s {
		return ""
	}
	return s
}

// The fixed part of the probe: one change of every kind, computed once by
// diffing two synthetic rendered configs.
var (
	probeOnce sync.Once
	probeBase *ChangeSet
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
		file("/etc/ndp-probe/changed.conf", "old", 0o644),
		file("/etc/ndp-probe/removed.conf", "old", 0o644),
		file(RegistriesConfPath, probeRegistriesOld, 0o644),
	}}
	fromIgn["systemd"] = map[string]any{"units": []any{unit("[Unit]\nDescription=old\n", "")}}
	toIgn := user("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIProbeNew probe@ndp", "$6$new")
	toIgn["storage"] = map[string]any{"files": []any{
		file("/etc/ndp-probe/changed.conf", "new", 0o600),
		file("/etc/ndp-probe/added.conf", "new", 0o644),
		file(RegistriesConfPath, probeRegistriesNew, 0o644),
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

func probeBaseChangeSet() (*ChangeSet, error) {
	probeOnce.Do(func() {
		from, to := probeConfigs()
		var cfgs [2]*Config
		for i, doc := range []map[string]any{from, to} {
			b, err := json.Marshal(doc)
			if err == nil {
				cfgs[i], err = ParseMachineConfig("ndp probe", b)
			}
			if err != nil {
				probeErr = err
				return
			}
		}
		probeBase, probeErr = Diff(cfgs[0], cfgs[1])
		if probeErr == nil && len(probeBase.Unreconcilable) > 0 {
			probeErr = fmt.Errorf("the probe change set is unreconcilable: %v", probeBase.Unreconcilable)
		}
	})
	return probeBase, probeErr
}

// probeChangeSet is the fixed probe plus a changed file per path and a
// changed unit per unit name.
func probeChangeSet(paths, units []string) (*ChangeSet, error) {
	base, err := probeBaseChangeSet()
	if err != nil {
		return nil, err
	}
	cs := *base
	cs.Changes = append([]Change(nil), base.Changes...)
	have := map[string]bool{}
	for _, c := range cs.Changes {
		have[c.ID] = true
	}
	for _, p := range paths {
		if id := "file:" + p; !have[id] {
			have[id] = true
			cs.Changes = append(cs.Changes, Change{ID: id, Kind: KindFile, Op: OpChanged, Path: p, Dirs: parentDirs(p), Fields: []string{"contents"},
				OldDigest: "sha256:" + strings.Repeat("0", 64), NewDigest: "sha256:" + strings.Repeat("1", 64), Source: "ndp-probe"})
		}
	}
	for _, u := range units {
		if id := "unit:" + u; !have[id] {
			have[id] = true
			cs.Changes = append(cs.Changes, Change{ID: id, Kind: KindUnit, Op: OpChanged, Name: u, Fields: []string{"contents"}, Source: "ndp-probe"})
		}
	}
	cs.sort()
	return &cs, nil
}
