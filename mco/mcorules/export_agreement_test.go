package mcorules_test

// The acceptance test of ndp's entries in the MCO's own policy (mcoentries):
// a differential against the MCO's own code. On the real rendered configs
// and seeded mutations of them (the agreement test's generator,
// mutate_test.go, plus kubelet.conf and CRI-O drop-in content edits made
// here), with random NodeDisruptionPolicy sets (declarative entries at the
// paths the mutations touch and the directories above them, unit and sshkey
// entries, Rego policies that claim by contents, by a literal path or by
// c.path alone, the shipped example policies, bundle-shaped policies, some
// for some pools only), each case:
//
//   - plans OLD → NEW with ndp's planner for a pool (its labels decide
//     which per-pool policies apply);
//   - computes ndp's static entries (mcoentries.Static) and the update's
//     per-update entries (mcoentries.ForUpdate on top of them): the export,
//     spec.nodeDisruptionPolicy = static merged with per-update, as ndp
//     applies it (mcoentries.ApplyObject);
//   - checks that the export passes the MCO API's validation
//     (mcorules.Validate) and judges it by the MCO's decision with it:
//     in-process (mcorules.Decide, which agrees with the MCO's code on the
//     agreement test's 10,400 cases) on every case, and live through
//     ../shared/mco-ref/mco-decide on a random sample (all cases with
//     -export.live-all: make mco-export-agreement).
//
// Verdicts: (i) where ForUpdate says the MCO then does ndp's plan (Equal),
// it does: the same action set (Special counted as its CRI-O reload), drain
// and reboot; (ii) always, the MCO with the export is never less disruptive
// than ndp's plan (nothing < service actions < drain < reboot, and at an
// equal rank with service actions ndp's are a subset of the MCO's); (iii)
// where no user policy claims any change (every reason is the default
// policy's, or no policy's), the MCO with the export is never less
// disruptive than the MCO with no entries, its own default. A violation
// fails the test, naming the case, its changes, the policies, the entries
// and the decisions; -export.case=N replays one case with all of it.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"path"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/mco/mcoentries"
	"github.com/ndp-dev/ndp/mco/mcorules"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/changeset"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/loader"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/policies"
)

var (
	exportCaseCount = flag.Int("export.cases", 2000, "export agreement cases run in-process, mcorules.Decide judging every one (make mco-export-agreement: 10,000)")
	exportLive      = flag.Int("export.live", 60, "export agreement cases also judged live through mco-decide (a random sample)")
	exportLiveSeed  = flag.Uint64("export.seed", 0, "seed of the live sample (0: from the clock; the log names it)")
	exportLiveAll   = flag.Bool("export.live-all", false, "judge every export agreement case live through mco-decide too")
	exportWorkers   = flag.Int("export.workers", 0, "export agreement cases run at once (0: GOMAXPROCS)")
	exportOnly      = flag.Int("export.case", -1, "run only this export agreement case, and log everything about it")
)

// exportGeneratorSeed seeds every export case (with its index) and every
// policy set (with its own).
const exportGeneratorSeed = 43

// exportSetCount policy sets are shared by the cases: each compiles once,
// and its static entries are computed once.
const exportSetCount = 160

// Pools a case's update may be in, and the pool selectors of per-pool
// policies: each selector matches some of them.
type exportPool struct {
	Name   string
	Labels map[string]string
}

var exportPools = []exportPool{
	{"worker", map[string]string{"pool": "worker", "node-role.kubernetes.io/worker": ""}},
	{"infra", map[string]string{"pool": "infra", "node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/infra": ""}},
	{"master", map[string]string{"pool": "master", "node-role.kubernetes.io/master": ""}},
}

var exportSelectors = []metav1.LabelSelector{
	{MatchLabels: map[string]string{"pool": "worker"}},
	{MatchLabels: map[string]string{"pool": "infra"}},
	{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "node-role.kubernetes.io/worker", Operator: metav1.LabelSelectorOpExists}}},
	{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "pool", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"master"}}}},
	{MatchLabels: map[string]string{"pool": "master"}},
}

const (
	kubeletConfPath = "/etc/kubernetes/kubelet.conf"
	crioDropinDir   = "/etc/crio/crio.conf.d"
	crioDefaultPath = "/etc/crio/crio.conf.d/00-default"
	kubeletLogDrop  = "/etc/systemd/system/kubelet.service.d/20-logging.conf"
)

// exportPaths are the paths a policy set's entries and Rego name (with
// the real configs' own files and, at random, directories above them).
var exportPaths = slices.Concat(arbitraryPaths, defaultPaths, underDefaultDirs, nearMisses[:8], policyPaths, []string{
	kubeletConfPath, crioDropinDir, crioDropinDir + "/", crioDefaultPath, crioDropinDir + "/01-ctrcfg-logLevel",
	crioDropinDir + "/01-ctrcfg-pidsLimit", "/etc/kubernetes", "/etc/crio", kubeletLogDrop, "/etc/systemd/system/kubelet.service.d",
	"/etc/containers/registries.conf",
})

var exportUnits = slices.Compact(slices.Sorted(slices.Values(slices.Concat(policyUnits, extraUnits))))

var exportWords = []string{"generated change", "key=1", "maxPods", "log_level", "pids_limit", "quay.io", "Environment", "NOT-THERE"}

// exportPolicy is one policy of a set, with what it is, for the report.
type exportPolicy struct {
	policy.Policy
	Kind string // declarative, rego-word, rego-dir, rego-content, rego-unit, rego-kubelet, rego-crio, bundle, example
	Note string
}

// exportSet is one random NodeDisruptionPolicy set.
type exportSet struct {
	Index    int
	Policies []exportPolicy
	// What its entries and Rego name, for the mutations to touch.
	Targets, Units, Words []string
	SSH                   bool

	once   sync.Once
	pl     *planner.Planner
	static *mcoentries.StaticResult
	err    error
}

func (s *exportSet) policies() []policy.Policy {
	out := make([]policy.Policy, len(s.Policies))
	for i, p := range s.Policies {
		out[i] = p.Policy
	}
	return out
}

// compiled is the set's planner (the default policy and the set) and its
// static entries.
func (s *exportSet) compiled() (*planner.Planner, *mcoentries.StaticResult, error) {
	s.once.Do(func() {
		pols := policy.WithDefaultPolicy(s.policies())
		// The sandbox's memory budget is the whole process's heap, which
		// this package's other tests (the recorded agreement, 10,400 cases)
		// share while they run: a budget for one controller's evaluations
		// would stop a compilation here for their allocations. The sets are
		// small and fixed; the sandbox has its own tests.
		s.pl, s.err = planner.New(context.Background(), pols, engine.Options{EvalMemoryBytes: 8 << 30})
		if s.err != nil {
			s.err = fmt.Errorf("policy set %d: %w", s.Index, s.err)
			return
		}
		s.static, s.err = mcoentries.Static(context.Background(), mcoentries.StaticInput{Planner: s.pl, Policies: pols})
		if s.err != nil {
			s.err = fmt.Errorf("policy set %d: static entries: %w", s.Index, s.err)
		}
	})
	return s.pl, s.static, s.err
}

func (s *exportSet) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "policy set %d:", s.Index)
	for _, p := range s.Policies {
		fmt.Fprintf(&b, "\n    %s (%s, priority %d", p.Name, p.Kind, p.Priority)
		if p.PoolSelector != nil {
			sel, _ := metav1.LabelSelectorAsSelector(p.PoolSelector)
			fmt.Fprintf(&b, ", pools %s", sel)
		}
		b.WriteString(")")
		for _, f := range p.Files {
			fmt.Fprintf(&b, " file %s: %s;", f.Path, planner.FormatActions(f.Actions))
		}
		for _, u := range p.Units {
			fmt.Fprintf(&b, " unit %s: %s;", u.Name, planner.FormatActions(u.Actions))
		}
		if p.SSHKey != nil {
			fmt.Fprintf(&b, " sshkey: %s;", planner.FormatActions(p.SSHKey.Actions))
		}
		if p.Note != "" {
			fmt.Fprintf(&b, " %s", p.Note)
		}
	}
	return b.String()
}

// exportActions is an action list valid by openshift/api's rules
// (policy.ValidateActions): Reboot or None alone, at most 10, services
// named as systemd units.
func exportActions(r *rand.Rand) []policy.Action {
	switch r.IntN(6) {
	case 0:
		return []policy.Action{{Type: policy.ActionReboot}}
	case 1:
		return []policy.Action{{Type: policy.ActionNone}}
	}
	n := 1 + r.IntN(3)
	if r.IntN(15) == 0 {
		n = 10
	}
	var l []policy.Action
	for range n {
		switch r.IntN(5) {
		case 0:
			l = append(l, policy.Action{Type: policy.ActionDrain})
		case 1:
			l = append(l, policy.Action{Type: policy.ActionDaemonReload})
		case 2:
			l = append(l, policy.ReloadAction(pick(r, services)))
		default:
			l = append(l, policy.RestartAction(pick(r, services)))
		}
	}
	return l
}

// regoActions writes actions as a Rego (JSON) array.
func regoActions(as []policy.Action) string {
	b, err := json.Marshal(as)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// exportPath picks a path of the pool: a file's, or a directory above it,
// sometimes written with a final "/".
func exportPath(r *rand.Rand, pool []string) string {
	p := path.Clean(pick(r, pool))
	if r.IntN(3) == 0 {
		for range 1 + r.IntN(2) {
			if p != "/" {
				p = path.Dir(p)
			}
		}
	}
	if p != "/" && r.IntN(5) == 0 {
		p += "/"
	}
	return p
}

func exportPriority(r *rand.Rand) int32 {
	if r.IntN(3) == 0 {
		return int32(r.IntN(301))
	}
	// Ties are where claims unite: make them common.
	return pick(r, []int32{0, 50, 100, 100, 100, 150, 200, 300})
}

var (
	examplesOnce sync.Once
	examples     map[string]policy.Policy
	examplesErr  error
)

// examplePolicies are ndp's shipped example policies, as a user applies them.
func examplePolicies() (map[string]policy.Policy, error) {
	examplesOnce.Do(func() {
		examples = map[string]policy.Policy{}
		for _, n := range []string{"kubelet-live", "crio-live", "chrony"} {
			pols, _, err := loader.Load("../../examples/policies/" + n + ".yaml")
			if err != nil {
				examplesErr = err
				return
			}
			examples[n] = pols[0]
		}
	})
	return examples, examplesErr
}

// Rego templates. %[1]s is the package root.
const (
	regoWord = `package ndp.policy.%[1]s

import data.ndp.lib

target := %[2]q

has_word(c) if contains(c.new.text, %[3]q)

claims contains {"change": c.id, "match": target, "actions": lib.reboot, "reason": "its new contents name the word"} if {
	some c in lib.file_changes
	c.path == target
	has_word(c)
}

claims contains {"change": c.id, "match": target, "actions": %[4]s, "reason": "its new contents do not name the word"} if {
	some c in lib.file_changes
	c.path == target
	not has_word(c)
}
`
	regoDir = `package ndp.policy.%[1]s

import data.ndp.lib

dir := %[2]q

has_word(c) if contains(c.new.text, %[3]q)

claims contains {"change": c.id, "match": dir, "actions": %[4]s} if {
	some c in lib.file_changes
	dir in c.dirs
	has_word(c)
}

claims contains {"change": c.id, "match": dir, "actions": %[5]s} if {
	some c in lib.file_changes
	dir in c.dirs
	not has_word(c)
}
`
	regoContent = `package ndp.policy.%[1]s

import data.ndp.lib

claims contains {"change": c.id, "match": c.path, "actions": %[3]s, "reason": "its new contents name the word"} if {
	some c in lib.file_changes
	contains(c.new.text, %[2]q)
}
`
	regoUnit = `package ndp.policy.%[1]s

import data.ndp.lib

unit := %[2]q

dropins_changed(c) if "dropins" in c.fields

claims contains {"change": c.id, "match": c.name, "actions": [lib.daemon_reload, lib.restart(c.name)]} if {
	some c in input.changes
	c.kind == "unit"
	c.name == unit
	dropins_changed(c)
}

claims contains {"change": c.id, "match": c.name, "actions": %[3]s} if {
	some c in input.changes
	c.kind == "unit"
	c.name == unit
	not dropins_changed(c)
}
`
	regoAnyUnit = `package ndp.policy.%[1]s

claims contains {"change": c.id, "actions": %[2]s} if {
	some c in input.changes
	c.kind == "unit"
	c.op == %[3]q
}
`
	regoKubelet = `package ndp.policy.%[1]s

import data.ndp.lib

conf := "/etc/kubernetes/kubelet.conf"

live := %[2]s

claims contains {"change": c.id, "match": conf, "actions": [lib.restart("kubelet.service")]} if {
	some c in lib.file_changes
	c.path == conf
	lib.only_keys_changed(c, live)
}

claims contains {"change": c.id, "match": conf, "actions": %[3]s} if {
	some c in lib.file_changes
	c.path == conf
	not lib.only_keys_changed(c, live)
}
`
	regoCrio = `package ndp.policy.%[1]s

import data.ndp.lib

dropins := "/etc/crio/crio.conf.d/"

live := %[2]s

only_live(c) if count(lib.changed_paths(c) - live) == 0

claims contains {"change": c.id, "match": dropins, "actions": [lib.reload("crio.service")]} if {
	some c in lib.file_changes
	dropins in c.dirs
	only_live(c)
}

claims contains {"change": c.id, "match": dropins, "actions": %[3]s} if {
	some c in lib.file_changes
	dropins in c.dirs
	not only_live(c)
}
`
	bundleMain = `package ndp.policy.%[1]s

import data.ndp.lib
import data.ndp.policy.%[1]s.tables

claims contains claim if {
	some claim in lib.file_claims(tables.files)
}

claims contains {"change": c.id, "match": c.path, "actions": tables.worded} if {
	some c in lib.file_changes
	startswith(c.path, tables.prefix)
	contains(c.new.text, tables.word)
}
`
	bundleTables = `package ndp.policy.%[1]s.tables

files := {%[2]s}

prefix := %[3]q

word := %[4]q

worded := %[5]s
`
	bundleTest = `package ndp.policy.%[1]s_test

import data.ndp.policy.%[1]s

test_no_changes_no_claims if {
	count(%[1]s.claims) == 0 with input.changes as []
}
`
)

// rego fills a template; quoted arguments with %q are Go-quoted, which is
// valid Rego for these (ASCII) strings.
func rego(tmpl string, args ...any) string { return fmt.Sprintf(tmpl, args...) }

func regoSet(r *rand.Rand, from []string) string {
	l := slices.Clone(from)
	r.Shuffle(len(l), func(i, j int) { l[i], l[j] = l[j], l[i] })
	l = l[:1+r.IntN(len(l))]
	sort.Strings(l)
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "{" + strings.Join(q, ", ") + "}"
}

// genExportSet builds policy set i: one to five policies.
func genExportSet(i int, realPaths []string, ex map[string]policy.Policy) *exportSet {
	r := rand.New(rand.NewPCG(exportGeneratorSeed, 1<<42+uint64(i)))
	s := &exportSet{Index: i}
	pool := slices.Concat(exportPaths, realPaths)
	usedExample := map[string]bool{}
	n := 1 + r.IntN(5)
	for j := range n {
		name := fmt.Sprintf("s%d-p%d", i, j)
		root := fmt.Sprintf("s%d_p%d", i, j)
		p := exportPolicy{Policy: policy.Policy{Name: name, Priority: exportPriority(r), Origin: name + ".yaml"}}
		declarative := func(files, units int, ssh bool) {
			seen := map[string]bool{}
			for range files {
				fp := exportPath(r, pool)
				if seen[changeset.PathKey(fp)] {
					continue
				}
				seen[changeset.PathKey(fp)] = true
				p.Files = append(p.Files, operatorv1.NodeDisruptionPolicySpecFile{Path: fp, Actions: exportActions(r)})
				s.Targets = append(s.Targets, fp)
			}
			us := slices.Clone(exportUnits)
			r.Shuffle(len(us), func(a, b int) { us[a], us[b] = us[b], us[a] })
			for _, u := range us[:units] {
				p.Units = append(p.Units, operatorv1.NodeDisruptionPolicySpecUnit{Name: operatorv1.NodeDisruptionPolicyServiceName(u), Actions: exportActions(r)})
				s.Units = append(s.Units, u)
			}
			if ssh {
				p.SSHKey = &operatorv1.NodeDisruptionPolicySpecSSHKey{Actions: exportActions(r)}
				s.SSH = true
			}
		}
		module := func(src string) {
			p.Modules = append(p.Modules, policy.Module{Filename: name + ".rego", Source: src})
		}
		k := r.IntN(20)
		if k >= 18 {
			e := pick(r, []string{"kubelet-live", "crio-live", "chrony"})
			if usedExample[e] {
				k = 0
			} else {
				usedExample[e] = true
				prio := p.Priority
				p = exportPolicy{Policy: ex[e], Kind: "example", Note: "examples/policies/" + e + ".yaml"}
				p.Priority = prio
				switch e {
				case "kubelet-live":
					s.Targets = append(s.Targets, kubeletConfPath, kubeletLogDrop)
				case "crio-live":
					s.Targets = append(s.Targets, crioDropinDir)
				default:
					s.Targets = append(s.Targets, "/etc/chrony.conf")
				}
			}
		}
		switch {
		case k >= 18:
		case k < 8:
			p.Kind = "declarative"
			declarative(1+r.IntN(4), r.IntN(3), r.IntN(4) == 0)
		case k < 10:
			p.Kind = "rego-word"
			t := path.Clean(pick(r, pool))
			w := pick(r, exportWords)
			module(rego(regoWord, root, t, w, regoActions(exportActions(r))))
			p.Note = fmt.Sprintf("Rego: %s reboots when its new contents name %q", t, w)
			s.Targets, s.Words = append(s.Targets, t), append(s.Words, w)
		case k < 11:
			p.Kind = "rego-dir"
			d := path.Dir(path.Clean(pick(r, pool)))
			if d != "/" {
				d += "/"
			}
			w := pick(r, exportWords)
			module(rego(regoDir, root, d, w, regoActions(exportActions(r)), regoActions(exportActions(r))))
			p.Note = fmt.Sprintf("Rego: files beneath %s, by whether their new contents name %q", d, w)
			s.Targets, s.Words = append(s.Targets, d), append(s.Words, w)
		case k < 13:
			p.Kind = "rego-content"
			w := pick(r, exportWords)
			module(rego(regoContent, root, w, regoActions(exportActions(r))))
			p.Note = fmt.Sprintf("Rego: any file whose new contents name %q, matched by c.path (no literal path)", w)
			s.Words = append(s.Words, w)
		case k < 14:
			p.Kind = "rego-unit"
			if r.IntN(3) == 0 {
				op := pick(r, []string{"changed", "added", "removed"})
				module(rego(regoAnyUnit, root, regoActions(exportActions(r)), op))
				p.Note = fmt.Sprintf("Rego: every unit %s (no literal name)", op)
			} else {
				u := pick(r, exportUnits)
				module(rego(regoUnit, root, u, regoActions(exportActions(r))))
				p.Note = fmt.Sprintf("Rego: unit %s, by whether its drop-ins changed", u)
				s.Units = append(s.Units, u)
			}
		case k < 15:
			p.Kind = "rego-kubelet"
			module(rego(regoKubelet, root, regoSet(r, []string{"maxPods", "podPidsLimit", "kubeAPIQPS", "kubeAPIBurst", "evictionHard", "systemReserved"}), regoActions(exportActions(r))))
			p.Note = "Rego: kubelet.conf by the keys that changed"
			s.Targets = append(s.Targets, kubeletConfPath)
		case k < 16:
			p.Kind = "rego-crio"
			module(rego(regoCrio, root, regoSet(r, []string{"crio.runtime.log_level", "crio.runtime.pids_limit", "crio.image.pause_image"}), regoActions(exportActions(r))))
			p.Note = "Rego: CRI-O drop-ins by the settings that changed"
			s.Targets = append(s.Targets, crioDropinDir)
		default:
			// A bundle: what loader.bundlePolicy makes of an OPA bundle's
			// modules (sorted by path, tests apart), named by its root.
			p.Kind = "bundle"
			p.Origin = name + ".tar.gz"
			var entries []string
			seen := map[string]bool{}
			for range 1 + r.IntN(3) {
				fp := exportPath(r, pool)
				if seen[fp] {
					continue
				}
				seen[fp] = true
				entries = append(entries, fmt.Sprintf("%q: %s", fp, regoActions(exportActions(r))))
				s.Targets = append(s.Targets, fp)
			}
			prefix := path.Dir(path.Clean(pick(r, pool)))
			w := pick(r, exportWords)
			p.Modules = []policy.Module{
				{Filename: p.Origin + ":policy.rego", Source: rego(bundleMain, root)},
				{Filename: p.Origin + ":tables.rego", Source: rego(bundleTables, root, strings.Join(entries, ", "), prefix, w, regoActions(exportActions(r)))},
			}
			p.Tests = []policy.Module{{Filename: p.Origin + ":policy_test.rego", Source: rego(bundleTest, root)}}
			p.Note = fmt.Sprintf("bundle: table {%s}, files under %s naming %q", strings.Join(entries, ", "), prefix, w)
			s.Targets, s.Words = append(s.Targets, prefix), append(s.Words, w)
		}
		if strings.HasPrefix(p.Kind, "rego-") && r.IntN(5) == 0 {
			declarative(1, 0, false) // a Rego policy with a declarative entry too
		}
		if r.IntN(4) == 0 {
			sel := exportSelectors[r.IntN(len(exportSelectors))]
			p.PoolSelector = &sel
		}
		s.Policies = append(s.Policies, p)
	}
	return s
}

var (
	exportSetsOnce sync.Once
	exportSetsList []*exportSet
	exportSetsErr  error
)

// exportSets are the shared policy sets, generated once (compiled lazily).
func exportSets(bs []*base) ([]*exportSet, error) {
	exportSetsOnce.Do(func() {
		ex, err := examplePolicies()
		if err != nil {
			exportSetsErr = err
			return
		}
		seen := map[string]bool{}
		var real []string
		for _, b := range bs {
			for _, f := range (mc{b.doc}).files() {
				if p, _ := f.(obj)["path"].(string); p != "" && !seen[p] {
					seen[p] = true
					real = append(real, p)
				}
			}
		}
		sort.Strings(real)
		for i := range exportSetCount {
			s := genExportSet(i, real, ex)
			for _, p := range s.Policies {
				if errs := p.Validate(); len(errs) > 0 {
					exportSetsErr = fmt.Errorf("policy set %d: policy %s is not valid: %v", i, p.Name, errs)
					return
				}
			}
			exportSetsList = append(exportSetsList, s)
		}
	})
	return exportSetsList, exportSetsErr
}

// kubelet.conf and CRI-O content edits.

// kubeletDoc is m's kubelet.conf as a document (a minimal one when it has
// none, or none that parses).
func kubeletDoc(m mc) obj {
	if f := m.file(kubeletConfPath); f != nil {
		if j, err := yaml.YAMLToJSON(contents(f)); err == nil {
			if o, err := decodeJSON(j); err == nil && o != nil {
				return o
			}
		}
	}
	return obj{"kind": "KubeletConfiguration", "apiVersion": "kubelet.config.k8s.io/v1beta1", "maxPods": json.Number("250")}
}

func putKubelet(g *gen, m mc, o obj) {
	var b []byte
	var err error
	if g.r.IntN(5) == 0 {
		b, err = yaml.Marshal(o) // the same settings as YAML
	} else {
		b, err = json.MarshalIndent(o, "", "  ")
	}
	if err != nil {
		panic(err)
	}
	m.putFile(kubeletConfPath, b)
}

// kubeletEdit changes one setting of a kubelet.conf document.
func kubeletEdit(g *gen, o obj) string {
	n := func(v int) json.Number { return json.Number(fmt.Sprint(v)) }
	switch g.r.IntN(10) {
	case 0:
		o["maxPods"] = n(pick(g.r, []int{110, 200, 250, 300, 500}))
		return "maxPods"
	case 1:
		o["podPidsLimit"] = n(pick(g.r, []int{1024, 4096, 8192}))
		return "podPidsLimit"
	case 2:
		o["cpuManagerPolicy"] = pick(g.r, []string{"static", "none"})
		o["reservedSystemCPUs"] = pick(g.r, []string{"0", "0-1", "0,2"})
		return "cpuManagerPolicy, reservedSystemCPUs"
	case 3:
		o["systemReserved"] = obj{"cpu": pick(g.r, []string{"500m", "1"}), "memory": pick(g.r, []string{"1Gi", "2Gi"})}
		return "systemReserved"
	case 4:
		o["evictionHard"] = obj{"memory.available": pick(g.r, []string{"100Mi", "200Mi", "500Mi"})}
		return "evictionHard"
	case 5:
		o["kubeAPIQPS"], o["kubeAPIBurst"] = n(pick(g.r, []int{50, 100})), n(pick(g.r, []int{100, 200}))
		return "kubeAPIQPS, kubeAPIBurst"
	case 6:
		o["syncFrequency"] = pick(g.r, []string{"30s", "1m0s"})
		return "syncFrequency"
	case 7:
		o["cpuManagerReconcilePeriod"] = "0s" // a zero value: no setting changes
		return "a zero value"
	case 8:
		delete(o, "podPidsLimit")
		return "podPidsLimit removed"
	}
	return "formatting only"
}

// kubeletConfEdit edits /etc/kubernetes/kubelet.conf's contents (as the
// MCO writes a KubeletConfig's), sometimes OLD's too, or its log-level
// drop-in.
func kubeletConfEdit(g *gen) {
	if g.r.IntN(8) == 0 {
		c := fmt.Sprintf("[Service]\nEnvironment=\"KUBELET_LOG_LEVEL=%d\"\n", 2+g.r.IntN(6))
		switch g.r.IntN(3) {
		case 0:
			g.old.removeFile(kubeletLogDrop)
			g.new.putFile(kubeletLogDrop, []byte(c))
			g.say("kubelet log-level drop-in added")
		case 1:
			g.old.putFile(kubeletLogDrop, []byte("[Service]\nEnvironment=\"KUBELET_LOG_LEVEL=2\"\n"))
			g.new.putFile(kubeletLogDrop, []byte(c))
			g.say("kubelet log-level drop-in changed")
		default:
			g.old.putFile(kubeletLogDrop, []byte(c))
			g.new.removeFile(kubeletLogDrop)
			g.say("kubelet log-level drop-in removed")
		}
		return
	}
	if g.r.IntN(4) == 0 {
		o := kubeletDoc(g.old)
		what := kubeletEdit(g, o)
		putKubelet(g, g.old, o)
		if g.new.file(kubeletConfPath) == nil || g.r.IntN(2) == 0 {
			// NEW starts from OLD's kubelet.conf.
			g.new.removeFile(kubeletConfPath)
			g.new.setFiles(append(g.new.files(), deepCopy(g.old.file(kubeletConfPath))))
		}
		g.say("kubelet.conf of OLD: %s", what)
	}
	o := kubeletDoc(g.new)
	var what []string
	for range 1 + g.r.IntN(2) {
		what = append(what, kubeletEdit(g, o))
	}
	putKubelet(g, g.new, o)
	g.say("kubelet.conf: %s", strings.Join(what, "; "))
}

var (
	crioLogLevel  = regexp.MustCompile(`(?m)^log_level = ".*"$`)
	crioPause     = regexp.MustCompile(`(?m)^pause_image = ".*"$`)
	crioRuntimeRe = regexp.MustCompile(`(?m)^\[crio\.runtime\]\n`)
)

// crioSet sets key under [crio.runtime] of a CRI-O TOML file (or appends
// the table when it has none).
func crioSet(text, key, value string) string {
	line := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(key) + ` = .*$`)
	if line.MatchString(text) {
		return line.ReplaceAllString(text, key+" = "+value)
	}
	if loc := crioRuntimeRe.FindStringIndex(text); loc != nil {
		return text[:loc[1]] + key + " = " + value + "\n" + text[loc[1]:]
	}
	return text + "\n[crio.runtime]\n" + key + " = " + value + "\n"
}

// crioConfEdit edits CRI-O's configuration: 00-default's settings, or a
// ContainerRuntimeConfig-like drop-in added, changed or removed.
func crioConfEdit(g *gen) {
	def := func(m mc) string {
		if f := m.file(crioDefaultPath); f != nil {
			return string(contents(f))
		}
		return "[crio]\n\n[crio.runtime]\nlog_level = \"info\"\n\n[crio.image]\npause_image = \"quay.io/pause\"\n"
	}
	level := func() string {
		return fmt.Sprintf("%q", pick(g.r, []string{"debug", "info", "warn", "error", "trace"}))
	}
	switch g.r.IntN(9) {
	case 0:
		g.new.putFile(crioDefaultPath, []byte(crioLogLevel.ReplaceAllString(def(g.new), "log_level = "+level())))
		g.say("crio 00-default: log_level")
	case 1:
		g.new.putFile(crioDefaultPath, []byte(crioSet(def(g.new), "pids_limit", fmt.Sprint(pick(g.r, []int{1024, 4096, 8192})))))
		g.say("crio 00-default: pids_limit")
	case 2:
		t := def(g.new)
		if crioPause.MatchString(t) {
			t = crioPause.ReplaceAllString(t, fmt.Sprintf("pause_image = \"quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:%064x\"", g.r.Uint64()))
		} else {
			t += "\n[crio.image]\npause_image = \"quay.io/pause:3.10\"\n"
		}
		g.new.putFile(crioDefaultPath, []byte(t))
		g.say("crio 00-default: pause_image")
	case 3:
		g.new.putFile(crioDefaultPath, []byte(crioSet(def(g.new), "default_runtime", fmt.Sprintf("%q", pick(g.r, []string{"crun", "runc"})))))
		g.say("crio 00-default: default_runtime")
	case 4:
		g.new.putFile(crioDefaultPath, []byte(def(g.new)+fmt.Sprintf("# generated comment %d\n", g.r.IntN(1000))))
		g.say("crio 00-default: a comment")
	case 5:
		p := crioDropinDir + "/01-ctrcfg-logLevel"
		g.old.removeFile(p)
		g.new.putFile(p, []byte("[crio.runtime]\nlog_level = "+level()+"\n"))
		g.say("crio drop-in %s added", p)
	case 6:
		p := crioDropinDir + "/01-ctrcfg-pidsLimit"
		g.old.putFile(p, []byte("[crio.runtime]\npids_limit = 4096\n"))
		g.new.putFile(p, []byte(fmt.Sprintf("[crio.runtime]\npids_limit = %d\n", pick(g.r, []int{2048, 8192}))))
		if g.r.IntN(2) == 0 {
			g.new.putFile(p, []byte(fmt.Sprintf("[crio.runtime]\npids_limit = 4096\nlog_level = %s\n", level())))
		}
		g.say("crio drop-in %s changed", p)
	case 7:
		p := crioDropinDir + "/01-ctrcfg-logSizeMax"
		g.old.putFile(p, []byte("[crio.runtime]\nlog_size_max = 52428800\n"))
		g.new.removeFile(p)
		g.say("crio drop-in %s removed", p)
	default:
		p := crioDropinDir + "/99-broken"
		g.old.removeFile(p)
		g.new.putFile(p, []byte("log_level = = debug\n"))
		g.say("crio drop-in %s added, not TOML", p)
	}
}

// setTarget changes something the set's policies may decide: a path its
// entries or Rego name, beneath one, a near miss, a unit it names, the
// SSH keys; sometimes with one of its Rego words in the new contents.
func setTarget(g *gen, s *exportSet) {
	if len(s.Units) > 0 && g.r.IntN(4) == 0 {
		n := pick(g.r, s.Units)
		if g.old.unit(n) == nil {
			g.old.setUnits(append(g.old.units(), obj{"name": n, "enabled": true, "contents": unitText(g, n)}))
		}
		switch u := g.new.unit(n); {
		case u == nil:
			g.new.setUnits(append(g.new.units(), obj{"name": n, "enabled": true, "contents": unitText(g, n)}))
		case g.r.IntN(3) == 0:
			u["dropins"] = append(slices.Clone(list(u, "dropins")), obj{"name": fmt.Sprintf("99-gen-%d.conf", g.r.IntN(100)), "contents": "[Service]\nEnvironment=GEN=1\n"})
		default:
			u["contents"] = unitText(g, n)
		}
		g.say("unit %s", n)
		return
	}
	if s.SSH && g.r.IntN(6) == 0 {
		classByName("ssh-keys").mut(g)
		return
	}
	if len(s.Targets) == 0 {
		classes[0].mut(g) // file-content
		return
	}
	clean := path.Clean(pick(g.r, s.Targets))
	target := nearPath(g, clean)
	switch {
	case target == kubeletConfPath && g.r.IntN(2) == 0:
		kubeletConfEdit(g)
		return
	case (target == crioDropinDir || strings.HasPrefix(target, crioDropinDir+"/")) && g.r.IntN(2) == 0:
		crioConfEdit(g)
		return
	case target == "/etc/containers/registries.conf" && g.r.IntN(2) == 0:
		registriesCase(g, slices.Concat(safeRegistryEdits, unsafeRegistryEdits))
		return
	case target == "/" || target == "/etc" || target == "/etc/containers/registries.conf":
		target = path.Join(clean, "gen.conf")
	}
	g.changeFile(target)
	if len(s.Words) > 0 && g.new.file(target) != nil && g.r.IntN(2) == 0 {
		w := pick(g.r, s.Words)
		g.new.putFile(target, append(contents(g.new.file(target)), []byte(w+"\n")...))
		g.say("%q in %s", w, target)
	}
}

// exportClass is a mutation class of the export cases: every class of the
// agreement generator, and this file's.
type exportClass struct {
	name string
	mut  func(g *gen, s *exportSet)
}

var exportClasses = func() []exportClass {
	var l []exportClass
	for _, c := range classList() {
		l = append(l, exportClass{c.name, func(g *gen, _ *exportSet) {
			if c.mut != nil {
				c.mut(g)
			}
		}})
	}
	target := exportClass{"policy-set-target", setTarget}
	kubelet := exportClass{"kubelet-conf", func(g *gen, _ *exportSet) { kubeletConfEdit(g) }}
	crio := exportClass{"crio-conf", func(g *gen, _ *exportSet) { crioConfEdit(g) }}
	return append(l, target, target, target, target, kubelet, kubelet, crio, crio)
}()

// exportCase is one generated update and the policy set and pool it is
// judged with.
type exportCase struct {
	Index    int
	Class    string
	Base     string
	Desc     []string
	Set      *exportSet
	Pool     exportPool
	Old, New []byte
}

// makeExportCase builds case i. forceSet, forceClass and forcePool (>= 0)
// override the drawn ones and extra (fuzz input) adds mutations, a class a
// byte.
func makeExportCase(i int, bs []*base, sets []*exportSet, forceSet, forceClass, forcePool int, extra []byte) *exportCase {
	r := rand.New(rand.NewPCG(exportGeneratorSeed, uint64(i)))
	set := sets[r.IntN(len(sets))]
	if forceSet >= 0 {
		set = sets[forceSet%len(sets)]
	}
	pool := exportPools[r.IntN(len(exportPools))]
	if forcePool >= 0 {
		pool = exportPools[forcePool%len(exportPools)]
	}
	ci := i % len(exportClasses)
	if forceClass >= 0 {
		ci = forceClass % len(exportClasses)
	}
	cl := exportClasses[ci]
	c := &exportCase{Index: i, Class: cl.name, Set: set, Pool: pool}
	ob, nb := bs[r.IntN(len(bs))], (*base)(nil)
	if cl.name == "real-pair" {
		pr := pick(r, realPairs(bs))
		ob, nb = pr[0], pr[1]
	} else {
		nb = ob
	}
	g, bases := newGen(r, ob, nb, "export", i)
	c.Base = bases
	cl.mut(g, set)
	if cl.name != "policy-set-target" && r.IntN(2) == 0 {
		setTarget(g, set)
	}
	switch r.IntN(8) {
	case 0:
		kubeletConfEdit(g)
	case 1:
		crioConfEdit(g)
	}
	for _, x := range extra {
		exportClasses[int(x)%len(exportClasses)].mut(g, set)
	}
	c.Desc = g.desc
	c.Old, c.New = marshalMC(g.old), marshalMC(g.new)
	return c
}

// exportOutcome is what one case found.
type exportOutcome struct {
	index       int
	class       string
	kind        string // "equal", "both refuse", "not expressible"
	reasons     []string
	perUpdate   bool // per-update entries were needed
	staticUsed  bool // a static entry decided a change
	noUserClaim bool
	invalid     string // ndp cannot read or plan the inputs
	violations  []string
	lowered     []string // (iii): what the export lowered, as loweredKeys says
	live        *exportLiveResult
	report      string // everything about the case, for a violation or -export.case
}

// exportLiveResult is the live judgement of a sampled case.
type exportLiveResult struct {
	export, dflt *verdict
	disagree     []string
}

func decisionVerdict(d *mcorules.Decision) verdict {
	if len(d.Refused) > 0 {
		return verdict{Refused: true}
	}
	v := verdict{Drain: d.Drain, Reboot: d.Reboot, Error: d.Error}
	for _, a := range d.Actions {
		v.Actions = append(v.Actions, strings.TrimSpace(string(a.Type)+" "+a.Service))
	}
	sort.Strings(v.Actions)
	return v
}

// planVerdict is ndp's plan in the MCO's terms (mcoTerms).
func planVerdict(p *planner.Plan) verdict {
	if len(p.Unreconcilable) > 0 {
		return verdict{Refused: true}
	}
	v := verdict{Drain: p.Drain, Reboot: p.Reboot}
	for _, a := range p.Actions {
		v.Actions = append(v.Actions, planner.FormatActions([]policy.Action{a}))
	}
	return mcoTerms(v)
}

// disruption ranks what a verdict (in mcoTerms) does to a node.
func disruption(v verdict) int {
	switch {
	case v.Reboot:
		return 3
	case v.Drain:
		return 2
	case len(v.Actions) > 0:
		return 1
	}
	return 0
}

// lessDisruptive says how got (the MCO's, in mcoTerms) does less than want
// (mcoTerms), "" when it does not: a lower rank, or at an equal rank with
// service actions, one of want's missing. A refusal or a failed update
// applies nothing and is never compared (no entry changes either).
func lessDisruptive(got, want verdict) string {
	if got.Refused || want.Refused || got.Error != "" || got.Invalid != "" || want.Invalid != "" {
		return ""
	}
	rg, rw := disruption(got), disruption(want)
	if rg < rw {
		return fmt.Sprintf("rank %d < %d", rg, rw)
	}
	if rg == rw && (rg == 1 || rg == 2) {
		for _, a := range want.Actions {
			if !slices.Contains(got.Actions, a) {
				return fmt.Sprintf("equal rank, without %s", a)
			}
		}
	}
	return ""
}

// sameEffect: the same refusal, action set (mcoTerms), drain and reboot.
func sameEffect(mco, ndp verdict) bool {
	m := mcoTerms(mco)
	if m.Refused || ndp.Refused {
		return m.Refused == ndp.Refused
	}
	return slices.Equal(m.Actions, ndp.Actions) && m.Drain == ndp.Drain && m.Reboot == ndp.Reboot
}

// reasonKey groups ForUpdate's reasons for the summary.
func reasonKey(u mcoentries.Unexpressed) string {
	r := u.Reason
	switch {
	case strings.Contains(r, "the MCO always reboots for it"):
		return "the MCO's fixed rule (" + u.Subject + ") reboots, ndp does not"
	case strings.HasPrefix(r, "the MCO refuses"):
		return "the MCO refuses the update, ndp plans it"
	case strings.HasPrefix(r, "ndp refuses"):
		return "ndp refuses the update, the MCO applies it"
	case strings.HasPrefix(r, "the MCO's daemon fails it"):
		return "the MCO's daemon fails the update (registries.conf it cannot read)"
	case strings.Contains(r, "unit names of a systemd type only"):
		return "a unit name the MCO's API does not take"
	case strings.HasPrefix(r, "the MCO would"):
		return "other: the MCO does otherwise with the entries"
	}
	return "other: " + r
}

// exportDocument is the MachineConfiguration ndp applies with spec (what
// `ndp export` would write), as JSON.
func exportDocument(spec mcoentries.Entries) ([]byte, error) {
	u, err := mcoentries.ApplyObject(spec, nil)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(u.Object)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// judgeExport runs one case in-process (and live through tool when it is
// set).
func judgeExport(ctx context.Context, c *exportCase, tool, dir string, verbose bool) (*exportOutcome, error) {
	o := &exportOutcome{index: c.Index, class: c.Class}
	p := parseCase(&agreementCase{Old: c.Old, New: c.New})
	if p.err != nil {
		o.invalid = p.err.Error()
		return o, nil
	}
	pl, st, err := c.Set.compiled()
	if err != nil {
		return nil, err
	}
	plan, err := pl.Plan(ctx, planner.Request{From: p.from, To: p.to, Pool: c.Pool.Name, PoolLabels: c.Pool.Labels})
	var inputErr *machineconfig.InputError
	if errors.As(err, &inputErr) {
		// ndp refuses to plan it (a registries.conf it cannot read): no
		// plan, no entries to judge.
		o.invalid = "ndp cannot plan it: " + inputErr.Error()
		return o, nil
	}
	if err != nil {
		return nil, fmt.Errorf("case %d: planning: %w", c.Index, err)
	}
	fu, err := mcoentries.ForUpdate(mcoentries.Update{From: p.from, To: p.to, Plan: plan}, st.Entries)
	if err != nil {
		return nil, fmt.Errorf("case %d: per-update entries: %w", c.Index, err)
	}
	spec := mcoentries.Sorted(mcoentries.Merge(st.Entries, fu.Entries))
	pols := mcorules.MergePolicies(spec)
	dx, err := mcorules.Decide(mcorules.Input{From: p.from, To: p.to, Policies: pols})
	if err != nil {
		return nil, err
	}
	dd, err := mcorules.Decide(mcorules.Input{From: p.from, To: p.to, Policies: mcorules.Defaults()})
	if err != nil {
		return nil, err
	}
	ndp, withExport, dflt := planVerdict(plan), decisionVerdict(dx), decisionVerdict(dd)

	o.noUserClaim = true
	seen := map[string]bool{}
	for _, r := range plan.Reasons {
		seen[r.ChangeID] = true
		if r.Policy != policies.DefaultPolicyName && r.Policy != planner.NoPolicy {
			o.noUserClaim = false
		}
	}
	// A change the MCO sees and ndp does not (an overwrite flag, contents
	// re-encoded) is claimed by a user policy when the export decides it
	// by a static entry of one: that declarative entry would decide it,
	// were ndp to see it.
	for _, r := range dx.Rules {
		kind, subject, _ := strings.Cut(r.Change, " ")
		entry, isEntry := strings.CutPrefix(r.Rule, kind+" policy ")
		if (kind != "file" && kind != "unit") || !isEntry || seen[kind+":"+subject] {
			continue
		}
		for _, pol := range st.From[kind+":"+entry] {
			if pol != policies.DefaultPolicyName && pol != planner.NoPolicy {
				o.noUserClaim = false
			}
		}
	}
	o.perUpdate = !mcoentries.Empty(fu.Entries)
	o.staticUsed = staticDecided(st.Entries, pols, dx)
	switch {
	case fu.Equal && ndp.Refused:
		o.kind = "both refuse"
	case fu.Equal:
		o.kind = "equal"
	default:
		o.kind = "not expressible"
		for _, u := range fu.Unexpressed {
			if k := reasonKey(u); !slices.Contains(o.reasons, k) {
				o.reasons = append(o.reasons, k)
			}
		}
	}

	judge := func(side string, withExport, dflt verdict) {
		if fu.Equal && !sameEffect(withExport, ndp) {
			o.violations = append(o.violations, fmt.Sprintf("(i) %s: ForUpdate says the MCO does ndp's plan, it does not: MCO %s, ndp %s", side, withExport, ndp))
		}
		if why := lessDisruptive(mcoTerms(withExport), ndp); why != "" {
			o.violations = append(o.violations, fmt.Sprintf("(ii) %s: the MCO with the export does less than ndp's plan (%s): MCO %s, ndp %s", side, why, withExport, ndp))
		}
		if o.noUserClaim {
			if why := lessDisruptive(mcoTerms(withExport), mcoTerms(dflt)); why != "" {
				if side == "in-process" {
					o.lowered = loweredKeys(dx, dd, plan)
				}
				o.violations = append(o.violations, fmt.Sprintf("(iii) %s %s: no user policy claims a change, yet the MCO with the export does less than its own default (%s): with the export %s, default %s; lowered: %s",
					side, loweredBy(dx, dd, plan), why, withExport, dflt, strings.Join(lowered(dx, dd, plan), "; ")))
			}
		}
	}
	if err := mcorules.Validate(spec); err != nil {
		o.violations = append(o.violations, "the export fails the MCO API's validation: "+err.Error())
	}
	judge("in-process", withExport, dflt)

	doc, err := exportDocument(spec)
	if err != nil {
		return nil, err
	}
	if tool != "" {
		lv := &exportLiveResult{}
		v, _, err := runTool(tool, dir, &agreementCase{Old: c.Old, New: c.New, MC: doc})
		if err != nil {
			return nil, fmt.Errorf("case %d: %w", c.Index, err)
		}
		lv.export = &v
		if !v.agrees(withExport) || v.Error != withExport.Error {
			lv.disagree = append(lv.disagree, fmt.Sprintf("with the export: mco-decide %s, mcorules %s", v, withExport))
		}
		liveDefault := dflt
		if o.noUserClaim {
			d, _, err := runTool(tool, dir, &agreementCase{Old: c.Old, New: c.New})
			if err != nil {
				return nil, fmt.Errorf("case %d: %w", c.Index, err)
			}
			lv.dflt, liveDefault = &d, d
			if !d.agrees(dflt) || d.Error != dflt.Error {
				lv.disagree = append(lv.disagree, fmt.Sprintf("with no entries: mco-decide %s, mcorules %s", d, dflt))
			}
		}
		for _, d := range lv.disagree {
			o.violations = append(o.violations, "live: mco-decide and mcorules.Decide disagree, "+d)
		}
		judge("live", v, liveDefault)
		o.live = lv
	}

	if len(o.violations) > 0 || verbose {
		var b strings.Builder
		fmt.Fprintf(&b, "case %d (class %s, base %s, pool %s): %s\n", c.Index, c.Class, c.Base, c.Pool.Name, strings.Join(c.Desc, "; "))
		fmt.Fprintf(&b, "  changes the MCO sees: files %v, units %v, passwd %t\n", dx.ChangedFiles, dx.ChangedUnits, dx.SSHChanged)
		fmt.Fprintf(&b, "  %s\n", c.Set)
		fmt.Fprintf(&b, "  ndp's plan: %s (%s)\n", mcoentries.PlanEffect(plan.Actions, plan.Drain, plan.Reboot), ndp)
		for _, r := range plan.Reasons {
			fmt.Fprintf(&b, "    %s: %s by %s (match %q)\n", r.Change, planner.FormatActions(r.Actions), r.Policy, r.Match)
		}
		for _, u := range plan.Unreconcilable {
			fmt.Fprintf(&b, "    unreconcilable: %s\n", u)
		}
		fmt.Fprintf(&b, "  static entries: %s\n", entriesText(st.Entries))
		for _, u := range st.Unexpressed {
			fmt.Fprintf(&b, "    withheld: %s\n", u)
		}
		fmt.Fprintf(&b, "  per-update entries: %s (before %s, after %s, equal %t)\n", entriesText(fu.Entries), fu.Before, fu.After, fu.Equal)
		for _, u := range fu.Unexpressed {
			fmt.Fprintf(&b, "    unexpressed: %s\n", u)
		}
		fmt.Fprintf(&b, "  export: %s", doc)
		fmt.Fprintf(&b, "  the MCO with the export: %s (%s)\n", mcoentries.DecisionEffect(dx), withExport)
		for _, r := range dx.Rules {
			fmt.Fprintf(&b, "    %s: %s, %s %s\n", r.Change, r.Rule, mcorules.FormatActions(r.Actions), r.Detail)
		}
		fmt.Fprintf(&b, "  the MCO with no entries: %s (%s)\n", mcoentries.DecisionEffect(dd), dflt)
		if o.live != nil {
			fmt.Fprintf(&b, "  live, mco-decide with the export: %s", o.live.export)
			if o.live.dflt != nil {
				fmt.Fprintf(&b, "; with no entries: %s", o.live.dflt)
			}
			b.WriteString("\n")
		}
		for _, v := range o.violations {
			fmt.Fprintf(&b, "  VIOLATION %s\n", v)
		}
		o.report = b.String()
	}
	return o, nil
}

// ruleRank ranks one MCO rule's actions as disruption does.
func ruleRank(r mcorules.Rule) int {
	rank := 0
	for _, a := range r.Actions {
		switch a.Type {
		case "Reboot":
			rank = max(rank, 3)
		case "Drain":
			rank = max(rank, 2)
		case "Special":
			if strings.HasPrefix(r.Detail, "unsafe") {
				rank = max(rank, 2)
			} else {
				rank = max(rank, 1)
			}
		case "None":
		default:
			rank = max(rank, 1)
		}
	}
	return rank
}

// changeID is the id of ndp's change an MCO rule's change names.
func changeID(change string) string {
	switch {
	case strings.HasPrefix(change, "file "):
		return "file:" + strings.TrimPrefix(change, "file ")
	case strings.HasPrefix(change, "unit "):
		return "unit:" + strings.TrimPrefix(change, "unit ")
	case change == "ssh keys":
		return "sshkey"
	case change == "password hash":
		return "password"
	}
	return change
}

// loweredRules pairs each rule of withExport that decides its change less
// disruptively than dflt's rule for the same change with that rule.
func loweredRules(withExport, dflt *mcorules.Decision) [][2]mcorules.Rule {
	def := map[string]mcorules.Rule{}
	for _, r := range dflt.Rules {
		def[r.Change] = r
	}
	var out [][2]mcorules.Rule
	for _, r := range withExport.Rules {
		if d, ok := def[r.Change]; ok && ruleRank(r) < ruleRank(d) {
			out = append(out, [2]mcorules.Rule{r, d})
		}
	}
	return out
}

// lowered lists the changes the MCO decides less disruptively with the
// export than with no entries, with the rules and ndp's deciders.
func lowered(withExport, dflt *mcorules.Decision, plan *planner.Plan) []string {
	var out []string
	for _, p := range loweredRules(withExport, dflt) {
		r, d := p[0], p[1]
		out = append(out, fmt.Sprintf("%s (default: %s %s; export: %s %s; ndp: %s)", r.Change, d.Rule, mcorules.FormatActions(d.Actions), r.Rule, mcorules.FormatActions(r.Actions), deciders(plan, changeID(r.Change))))
	}
	return out
}

// loweredKeys are lowered's changes for the report's tally: the subject
// with ndp's decider, or, where ndp sees no change, the MCO's field that
// changed.
func loweredKeys(withExport, dflt *mcorules.Decision, plan *planner.Plan) []string {
	var out []string
	for _, p := range loweredRules(withExport, dflt) {
		r, d := p[0], p[1]
		k := fmt.Sprintf("%s, by ndp's %s: %s → %s", r.Change, deciders(plan, changeID(r.Change)), mcorules.FormatActions(d.Actions), mcorules.FormatActions(r.Actions))
		if deciders(plan, changeID(r.Change)) == "" {
			k = fmt.Sprintf("a %s ndp sees no change of: %s → %s", strings.SplitN(r.Change, " ", 2)[0], mcorules.FormatActions(d.Actions), mcorules.FormatActions(r.Actions))
		}
		out = append(out, k)
	}
	return out
}

// loweredBy says, for the report's tally, who decided what the export
// lowered: ndp's default policy, or nothing (ndp sees no change there).
func loweredBy(withExport, dflt *mcorules.Decision, plan *planner.Plan) string {
	def := map[string]mcorules.Rule{}
	for _, r := range dflt.Rules {
		def[r.Change] = r
	}
	var by []string
	for _, r := range withExport.Rules {
		if d, ok := def[r.Change]; ok && ruleRank(r) < ruleRank(d) {
			w := deciders(plan, changeID(r.Change))
			if w == "" {
				w = "ndp sees no change"
			} else {
				w = "decided by ndp's " + w
			}
			if !slices.Contains(by, w) {
				by = append(by, w)
			}
		}
	}
	sort.Strings(by)
	return "[" + strings.Join(by, ", ") + "]"
}

// deciders are the policies of ndp's reasons for change id ("" when ndp
// has none: it sees no change there).
func deciders(plan *planner.Plan, id string) string {
	var l []string
	for _, r := range plan.Reasons {
		if r.ChangeID == id && !slices.Contains(l, r.Policy) {
			l = append(l, r.Policy)
		}
	}
	return strings.Join(l, ", ")
}

// staticDecided: a changed file, unit or the passwd section was decided by
// one of the static entries.
func staticDecided(static mcoentries.Entries, pols mcorules.Policies, d *mcorules.Decision) bool {
	for _, f := range d.ChangedFiles {
		if e, ok := mcorules.FilePolicy(f, pols); ok && slices.ContainsFunc(static.Files, func(s operatorv1.NodeDisruptionPolicySpecFile) bool { return s.Path == e.Path }) {
			return true
		}
	}
	for _, u := range d.ChangedUnits {
		if slices.ContainsFunc(static.Units, func(s operatorv1.NodeDisruptionPolicySpecUnit) bool { return string(s.Name) == u }) {
			return true
		}
	}
	return d.SSHChanged && len(static.SSHKey.Actions) > 0
}

func entriesText(e mcoentries.Entries) string {
	if mcoentries.Empty(e) {
		return "none"
	}
	var l []string
	for _, f := range e.Files {
		l = append(l, fmt.Sprintf("file %s: %s", f.Path, planner.FormatActions(f.Actions)))
	}
	for _, u := range e.Units {
		l = append(l, fmt.Sprintf("unit %s: %s", u.Name, planner.FormatActions(u.Actions)))
	}
	if len(e.SSHKey.Actions) > 0 {
		l = append(l, "sshkey: "+planner.FormatActions(e.SSHKey.Actions))
	}
	return strings.Join(l, "; ")
}

func TestMCOExportAgreement(t *testing.T) {
	start := time.Now()
	bs, err := loadBases()
	if err != nil {
		t.Fatalf("the real configs: %v", err)
	}
	sets, err := exportSets(bs)
	if err != nil {
		t.Fatal(err)
	}
	n := *exportCaseCount
	first := 0
	if *exportOnly >= 0 {
		first, n = *exportOnly, *exportOnly+1
	}
	tool := liveTool(t)
	sample := map[int]bool{}
	switch {
	case tool == "":
		t.Logf("mco-decide not found (../shared/mco-ref/mco-decide or NDP_MCO_DECIDE): no live judgement, mcorules.Decide alone judges")
	case *exportLiveAll || *exportOnly >= 0:
		t.Logf("live: every case through mco-decide")
	default:
		seed := *exportLiveSeed
		if seed == 0 {
			seed = uint64(time.Now().UnixNano())
		}
		t.Logf("live sample: %d cases, -export.seed=%d", *exportLive, seed)
		r := rand.New(rand.NewPCG(seed, 0))
		for len(sample) < min(*exportLive, n) {
			sample[r.IntN(n)] = true
		}
	}
	live := func(i int) bool { return tool != "" && (*exportLiveAll || *exportOnly >= 0 || sample[i]) }

	outcomes := make([]*exportOutcome, n)
	nworkers := runtime.GOMAXPROCS(0)
	if *exportWorkers > 0 {
		nworkers = *exportWorkers
	}
	// Compile the policy sets (and compute their static entries) first:
	// the engine's memory watchdog counts the process's heap, which the
	// cases' work would grow while a set compiles.
	if *exportOnly < 0 {
		t0 := time.Now()
		var nextSet atomic.Int64
		var setErrs []string
		var mu sync.Mutex
		var swg sync.WaitGroup
		for range nworkers {
			swg.Go(func() {
				for {
					i := int(nextSet.Add(1) - 1)
					if i >= len(sets) {
						return
					}
					if _, _, err := sets[i].compiled(); err != nil {
						mu.Lock()
						setErrs = append(setErrs, err.Error())
						mu.Unlock()
					}
				}
			})
		}
		swg.Wait()
		if len(setErrs) > 0 {
			t.Fatalf("%d policy sets do not compile: %s", len(setErrs), strings.Join(setErrs[:min(3, len(setErrs))], "\n"))
		}
		t.Logf("%d policy sets compiled, their static entries computed, in %s", len(sets), time.Since(t0).Round(time.Millisecond))
	}
	// The cases allocate a few MB each (parsing two real configs) and keep
	// little: collect less often (after the sets compiled, see above).
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	var next, done atomic.Int64
	next.Store(int64(first))
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var errs []string
	var liveTime atomic.Int64
	for range nworkers {
		wg.Go(func() {
			dir := t.TempDir()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				o, err := func() (o *exportOutcome, err error) {
					defer func() {
						if r := recover(); r != nil {
							err = fmt.Errorf("case %d: panic: %v\n%s", i, r, debug.Stack())
						}
					}()
					c := makeExportCase(i, bs, sets, -1, -1, -1, nil)
					lt := ""
					if live(i) {
						lt = tool
					}
					t0 := time.Now()
					o, err = judgeExport(context.Background(), c, lt, dir, *exportOnly >= 0)
					if lt != "" {
						liveTime.Add(int64(time.Since(t0)))
					}
					return o, err
				}()
				if err != nil {
					errMu.Lock()
					errs = append(errs, err.Error())
					errMu.Unlock()
					continue
				}
				outcomes[i] = o
				if d := done.Add(1); *exportLiveAll && d%1000 == 0 {
					t.Logf("%d of %d cases, %s", d, n-first, time.Since(start).Round(time.Second))
				}
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d cases failed to run: %s", len(errs), strings.Join(errs[:min(5, len(errs))], "\n"))
	}
	elapsed := time.Since(start)
	outcomes = outcomes[first:]

	// The summary.
	type row struct{ cases, equal, refused, notExpr, perUpdate, static, noUser, invalid, violations int }
	rows := map[string]*row{}
	var total row
	reasons := map[string]int{}
	var liveRuns, liveDefaultRuns, liveDisagree int
	var reports []string
	violationKinds := map[string][]int{}      // kind → cases
	violationReports := map[string][]string{} // kind → the first reports
	reasonCases := map[string][]int{}
	lowered := map[string][]int{} // (iii): change → cases
	for _, o := range outcomes {
		r := rows[o.class]
		if r == nil {
			r = &row{}
			rows[o.class] = r
		}
		for _, x := range []*row{r, &total} {
			x.cases++
			switch {
			case o.invalid != "":
				x.invalid++
				continue
			case o.kind == "equal":
				x.equal++
			case o.kind == "both refuse":
				x.refused++
			default:
				x.notExpr++
			}
			if o.perUpdate {
				x.perUpdate++
			}
			if o.staticUsed {
				x.static++
			}
			if o.noUserClaim {
				x.noUser++
			}
			if len(o.violations) > 0 {
				x.violations++
			}
		}
		for _, k := range o.reasons {
			reasons[k]++
			reasonCases[k] = append(reasonCases[k], o.index)
		}
		if o.live != nil {
			liveRuns++
			if o.live.dflt != nil {
				liveDefaultRuns++
			}
			if len(o.live.disagree) > 0 {
				liveDisagree++
			}
		}
		for _, k := range o.lowered {
			lowered[k] = append(lowered[k], o.index)
		}
		seenKind := map[string]bool{}
		for _, v := range o.violations {
			k, _, _ := strings.Cut(v, ":")
			if seenKind[k] {
				continue
			}
			seenKind[k] = true
			violationKinds[k] = append(violationKinds[k], o.index)
			if len(violationReports[k]) < 3 {
				violationReports[k] = append(violationReports[k], o.report)
			}
		}
		if o.report != "" {
			reports = append(reports, o.report)
		}
	}
	names := make([]string, 0, len(rows))
	for k := range rows {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	line := func(name string, r *row) {
		fmt.Fprintf(&b, "%-24s %6d %7d %8d %9d %10d %7d %8d %8d %10d\n", name, r.cases, r.equal, r.refused, r.notExpr, r.perUpdate, r.static, r.noUser, r.invalid, r.violations)
	}
	fmt.Fprintf(&b, "%-24s %6s %7s %8s %9s %10s %7s %8s %8s %10s\n", "class", "cases", "equal", "refused", "not-expr", "per-update", "static", "no-user", "invalid", "violations")
	for _, k := range names {
		line(k, rows[k])
	}
	line("total", &total)
	b.WriteString("\nnot expressible, by reason (a case may have several):\n")
	rk := make([]string, 0, len(reasons))
	for k := range reasons {
		rk = append(rk, k)
	}
	sort.Slice(rk, func(i, j int) bool {
		return reasons[rk[i]] > reasons[rk[j]] || reasons[rk[i]] == reasons[rk[j]] && rk[i] < rk[j]
	})
	for _, k := range rk {
		fmt.Fprintf(&b, "  %6d  %s (cases %s)\n", reasons[k], k, caseList(reasonCases[k]))
	}
	t.Logf("MCO export agreement: %d cases (%d policy sets, %d workers) in %s\n"+
		"equal: the MCO with the export does ndp's plan (ForUpdate's Equal, checked); refused: both refuse; not-expr: ForUpdate says the MCO cannot be told; "+
		"per-update: per-update entries were needed; static: a static entry decided a change; no-user: no user policy claims any change (verdict iii applies); "+
		"invalid: ndp cannot plan the update (a registries.conf it refuses to read), not judged\n%s\nevery case's export validated against the MCO API's schema and CEL rules: %d of %d pass",
		len(outcomes), exportSetCount, nworkers, elapsed.Round(time.Millisecond), b.String(), total.cases-total.invalid-violationCount(violationKinds, "the export fails"), total.cases-total.invalid)
	if liveRuns > 0 {
		t.Logf("live: %d cases judged through mco-decide with the export (%d also with no entries), %d disagree with mcorules.Decide; %s of worker time",
			liveRuns, liveDefaultRuns, liveDisagree, time.Duration(liveTime.Load()).Round(time.Millisecond))
	}
	if *exportOnly >= 0 && len(reports) > 0 && total.violations == 0 {
		t.Log(reports[0])
	}
	if total.violations > 0 {
		kinds := make([]string, 0, len(violationKinds))
		for k := range violationKinds {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		var b strings.Builder
		for _, k := range kinds {
			fmt.Fprintf(&b, "\n  %5d  %s (cases %s)", len(violationKinds[k]), k, caseList(violationKinds[k]))
		}
		if len(lowered) > 0 {
			b.WriteString("\n(iii): what the export lowered below the MCO's own default, by change (cases):")
			lk := make([]string, 0, len(lowered))
			for k := range lowered {
				lk = append(lk, k)
			}
			sort.Slice(lk, func(i, j int) bool {
				return len(lowered[lk[i]]) > len(lowered[lk[j]]) || len(lowered[lk[i]]) == len(lowered[lk[j]]) && lk[i] < lk[j]
			})
			for _, k := range lk {
				fmt.Fprintf(&b, "\n  %5d  %s (cases %s)", len(lowered[k]), k, caseList(lowered[k]))
			}
		}
		t.Errorf("%d cases violate; by kind:%s\nreplay one with -export.case=N; the first of each kind:", total.violations, b.String())
		printed := map[string]bool{}
		for _, k := range kinds {
			for _, r := range violationReports[k] {
				if !printed[r] {
					printed[r] = true
					t.Error(r)
				}
			}
		}
	}
}

// violationCount is how many cases have a violation of a kind beginning
// with prefix.
func violationCount(kinds map[string][]int, prefix string) int {
	n := 0
	for k, l := range kinds {
		if strings.HasPrefix(k, prefix) {
			n += len(l)
		}
	}
	return n
}

// caseList is the first cases of a list, for a log line.
func caseList(l []int) string {
	s := make([]string, 0, min(len(l), 12))
	for _, i := range l[:min(len(l), 12)] {
		s = append(s, fmt.Sprint(i))
	}
	if len(l) > 12 {
		s = append(s, "...")
	}
	return strings.Join(s, ", ")
}

// FuzzMCOExport: a case made from the fuzz input (the case index seeds the
// base and the mutations, then the policy set, the mutation class, the
// pool and up to four more mutation classes, a byte each), judged
// in-process: the export passes the MCO API's validation, the MCO with it
// never does less than ndp's plan, nor, where no user policy claims a
// change, less than its own default (and where ForUpdate says Equal, does
// ndp's plan).
func FuzzMCOExport(f *testing.F) {
	bs, err := loadBases()
	if err != nil {
		f.Fatalf("the real configs: %v", err)
	}
	sets, err := exportSets(bs)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint16(0), uint16(0), uint8(0), uint8(0), []byte{})
	f.Add(uint16(7), uint16(3), uint8(len(exportClasses)-1), uint8(1), []byte{byte(len(exportClasses) - 3)})
	f.Add(uint16(1234), uint16(99), uint8(len(exportClasses)-5), uint8(2), []byte{0, 4})
	f.Fuzz(func(t *testing.T, index, set uint16, class, pool uint8, extra []byte) {
		if len(extra) > 4 {
			extra = extra[:4]
		}
		c := makeExportCase(int(index), bs, sets, int(set), int(class), int(pool), extra)
		o, err := judgeExport(context.Background(), c, "", "", false)
		if err != nil {
			t.Fatal(err)
		}
		if len(o.violations) > 0 {
			t.Fatalf("index %d, set %d, class %d, pool %d, extra %v:\n%s", index, set, class, pool, extra, o.report)
		}
	})
}
