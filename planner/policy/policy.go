package policy

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/planner/changeset"
	"github.com/ndp-dev/ndp/planner/sandbox"
	"github.com/ndp-dev/ndp/policies"
)

// Action is one post-config action, openshift/api's shape.
type Action = operatorv1.NodeDisruptionPolicySpecAction

// Action types.
const (
	ActionReboot       = operatorv1.RebootSpecAction
	ActionNone         = operatorv1.NoneSpecAction
	ActionDrain        = operatorv1.DrainSpecAction
	ActionReload       = operatorv1.ReloadSpecAction
	ActionRestart      = operatorv1.RestartSpecAction
	ActionDaemonReload = operatorv1.DaemonReloadSpecAction
	// ActionPackageUpdate is ndp's own (ndpmcv1.PackageUpdateAction):
	// claimed by Rego policies only, as openshift/api's declarative
	// entries take its action types alone.
	ActionPackageUpdate = operatorv1.NodeDisruptionPolicySpecActionType("PackageUpdate")
)

// Limits that keep one policy from starving the planner.
const (
	MaxActions       = 10
	MaxServiceName   = 255
	MaxModuleBytes   = 256 << 10
	MaxPolicyBytes   = 1 << 20
	MaxPolicySetSize = 8 << 20
)

// ServiceNamePattern is openshift/api's NodeDisruptionPolicyServiceName.
var ServiceNamePattern = regexp.MustCompile(`^[a-zA-Z0-9:._\\-]+\.(service|socket|device|mount|automount|swap|target|path|timer|snapshot|slice|scope)$`)

// Module is a Rego source. Filename is the file it was read from, if any;
// Field names it inside that file (`NodeDisruptionPolicy "chrony" spec.rego`)
// and LineOffset is the line before its first line there, so that errors
// point at the line of the file the author edits.
type Module struct {
	Filename   string
	Field      string
	Source     string
	LineOffset int
}

// Position formats a Rego row and column as a place in the author's file.
func (m *Module) Position(row, col int) string {
	switch {
	case m.Filename == "":
		return fmt.Sprintf("%s:%d:%d", m.Field, row, col)
	case m.Field == "":
		return fmt.Sprintf("%s:%d:%d", m.Filename, row+m.LineOffset, col)
	default:
		return fmt.Sprintf("%s:%d:%d: %s line %d", m.Filename, row+m.LineOffset, col, m.Field, row)
	}
}

// Key identifies the module in the Rego compiler.
func (m *Module) Key() string {
	if m.Field == "" {
		return m.Filename
	}
	return m.Filename + "#" + m.Field
}

// Policy is one NodeDisruptionPolicy as the engine sees it: declarative
// entries plus Rego modules and their tests.
type Policy struct {
	Name     string
	Priority int32
	// Origin says where the policy came from, for messages: a file name,
	// or `NodeDisruptionPolicy "chrony"`.
	Origin string
	// PoolSelector restricts the policy to pools whose labels match; nil
	// means every pool.
	PoolSelector *metav1.LabelSelector
	Files        []operatorv1.NodeDisruptionPolicySpecFile
	Units        []operatorv1.NodeDisruptionPolicySpecUnit
	SSHKey       *operatorv1.NodeDisruptionPolicySpecSSHKey
	Modules      []Module
	Tests        []Module
}

// FromAPI converts a NodeDisruptionPolicy. file is the document it
// was read from ("" for one read from the cluster); regoLine and testsLine
// are the lines before the spec.rego and spec.regoTests blocks in that file,
// when known (0 otherwise).
func FromAPI(file string, p *v1alpha1.NodeDisruptionPolicy, regoLine, testsLine int) Policy {
	object := fmt.Sprintf("%s %q", v1alpha1.Kind, p.Name)
	origin := object
	if file != "" {
		origin = file + ": " + object
	}
	pol := Policy{
		Name:         p.Name,
		Priority:     p.EffectivePriority(),
		Origin:       origin,
		PoolSelector: p.Spec.PoolSelector,
		Files:        p.Spec.Files,
		Units:        p.Spec.Units,
		SSHKey:       p.Spec.SSHKey,
	}
	if p.Spec.Rego != "" {
		pol.Modules = []Module{{Filename: file, Field: object + " spec.rego", Source: p.Spec.Rego, LineOffset: regoLine}}
	}
	if p.Spec.RegoTests != "" {
		pol.Tests = []Module{{Filename: file, Field: object + " spec.regoTests", Source: p.Spec.RegoTests, LineOffset: testsLine}}
	}
	return pol
}

// DefaultPolicy is the embedded default policy, priority 0.
func DefaultPolicy() Policy {
	mods, tests := embeddedModules(policies.DefaultDir)
	return Policy{
		Name:     policies.DefaultPolicyName,
		Priority: v1alpha1.DefaultsPriority,
		Origin:   "embedded default policy",
		Modules:  mods,
		Tests:    tests,
	}
}

// WithDefaultPolicy is pols after the embedded default policy, unless one
// of them replaces it by name: the set `ndp plan --policy` plans with.
func WithDefaultPolicy(pols []Policy) []Policy {
	for _, p := range pols {
		if p.Name == policies.DefaultPolicyName {
			return pols
		}
	}
	return append([]Policy{DefaultPolicy()}, pols...)
}

// LibraryModules are loaded with every policy set: data.ndp.lib and the
// built-in declarative rule.
func LibraryModules() (mods, tests []Module) {
	return embeddedModules(policies.LibraryDir)
}

func embeddedModules(dir string) (mods, tests []Module) {
	entries, err := fs.ReadDir(policies.FS, dir)
	if err != nil {
		panic(err) // embedded at build time: cannot fail at run time
	}
	for _, e := range entries {
		name := path.Join(dir, e.Name())
		src, err := fs.ReadFile(policies.FS, name)
		if err != nil {
			panic(err)
		}
		m := Module{Filename: "policies/" + name, Source: string(src)}
		if strings.HasSuffix(name, "_test.rego") {
			tests = append(tests, m)
		} else {
			mods = append(mods, m)
		}
	}
	return mods, tests
}

func (p *Policy) poolSelector() (labels.Selector, error) {
	if p.PoolSelector == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(p.PoolSelector)
}

// AppliesTo says whether the policy is in force for a pool with these
// labels. A restricted policy does not apply when the pool is unknown
// (nil labels): without it the plan can only be more cautious.
func (p *Policy) AppliesTo(poolLabels map[string]string) bool {
	if p.PoolSelector == nil {
		return true
	}
	sel, err := p.poolSelector()
	if err != nil || (poolLabels == nil && !sel.Empty()) {
		return false
	}
	return sel.Matches(labels.Set(poolLabels))
}

// Validate checks a policy's declarative entries with openshift/api's rules
// for NodeDisruptionPolicySpec*, plus ndp's path rules.
func (p *Policy) Validate() field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	size := 0
	for _, m := range p.Modules {
		size += len(m.Source)
		if len(m.Source) > MaxModuleBytes {
			errs = append(errs, field.TooLong(spec.Child("rego"), "", MaxModuleBytes))
		}
	}
	for _, m := range p.Tests {
		size += len(m.Source)
	}
	if size > MaxPolicyBytes {
		errs = append(errs, field.TooLong(spec, "", MaxPolicyBytes))
	}
	if _, err := p.poolSelector(); err != nil {
		errs = append(errs, field.Invalid(spec.Child("poolSelector"), p.PoolSelector, err.Error()))
	}
	// A path covers itself and everything beneath it, written with or
	// without a final "/": /etc/app and /etc/app/ are one entry twice.
	seen := map[string]string{}
	for i, f := range p.Files {
		fp := spec.Child("files").Index(i)
		first, dup := seen[changeset.PathKey(f.Path)]
		switch {
		case !strings.HasPrefix(f.Path, "/"):
			errs = append(errs, field.Invalid(fp.Child("path"), f.Path, "must be an absolute path"))
		case path.Clean(f.Path) != strings.TrimSuffix(f.Path, "/") && f.Path != "/":
			errs = append(errs, field.Invalid(fp.Child("path"), f.Path, "must be a clean path (at most one final \"/\")"))
		case dup && first == f.Path:
			errs = append(errs, field.Duplicate(fp.Child("path"), f.Path))
		case dup:
			errs = append(errs, field.Invalid(fp.Child("path"), f.Path, fmt.Sprintf("names the same path as %q (with or without a final \"/\", a path covers itself and everything beneath it)", first)))
		}
		if !dup {
			seen[changeset.PathKey(f.Path)] = f.Path
		}
		errs = append(errs, validateDeclarativeActions(fp.Child("actions"), f.Actions)...)
	}
	seenUnits := map[string]bool{}
	for i, u := range p.Units {
		up := spec.Child("units").Index(i)
		errs = append(errs, validateServiceName(up.Child("name"), string(u.Name))...)
		if seenUnits[string(u.Name)] {
			errs = append(errs, field.Duplicate(up.Child("name"), u.Name))
		}
		seenUnits[string(u.Name)] = true
		errs = append(errs, validateDeclarativeActions(up.Child("actions"), u.Actions)...)
	}
	if p.SSHKey != nil {
		errs = append(errs, validateDeclarativeActions(spec.Child("sshkey", "actions"), p.SSHKey.Actions)...)
	}
	return errs
}

// validateDeclarativeActions is ValidateActions for a declarative entry,
// which has openshift/api's action types only (its CRD's enum).
func validateDeclarativeActions(fp *field.Path, actions []Action) field.ErrorList {
	errs := ValidateActions(fp, actions)
	for i, a := range actions {
		if a.Type == ActionPackageUpdate {
			errs = append(errs, field.NotSupported(fp.Index(i).Child("type"), a.Type, []string{
				string(ActionReboot), string(ActionNone), string(ActionDrain), string(ActionReload), string(ActionRestart), string(ActionDaemonReload)}))
		}
	}
	return errs
}

// ValidateActions applies openshift/api's rules to an action list: known
// types, Reboot and None only standalone, reload/restart present exactly
// for Reload/Restart with a valid unit name, at most 10 actions; and
// accepts ndp's PackageUpdate beside them.
func ValidateActions(fp *field.Path, actions []Action) field.ErrorList {
	var errs field.ErrorList
	if len(actions) == 0 {
		errs = append(errs, field.Required(fp, "at least one action"))
	}
	if len(actions) > MaxActions {
		errs = append(errs, field.TooMany(fp, len(actions), MaxActions))
	}
	for i, a := range actions {
		ap := fp.Index(i)
		switch a.Type {
		case ActionReboot, ActionNone:
			if len(actions) > 1 {
				errs = append(errs, field.Invalid(ap.Child("type"), a.Type, fmt.Sprintf("%s action can only be specified standalone, as it will override any other actions", a.Type)))
			}
		case ActionDrain, ActionDaemonReload, ActionReload, ActionRestart, ActionPackageUpdate:
		default:
			errs = append(errs, field.NotSupported(ap.Child("type"), a.Type, []string{
				string(ActionReboot), string(ActionNone), string(ActionDrain), string(ActionReload), string(ActionRestart), string(ActionDaemonReload), string(ActionPackageUpdate)}))
			continue
		}
		switch {
		case a.Type == ActionReload && a.Reload == nil:
			errs = append(errs, field.Required(ap.Child("reload"), "reload is required when type is Reload"))
		case a.Type != ActionReload && a.Reload != nil:
			errs = append(errs, field.Forbidden(ap.Child("reload"), "reload is forbidden unless type is Reload"))
		case a.Reload != nil:
			errs = append(errs, validateServiceName(ap.Child("reload", "serviceName"), string(a.Reload.ServiceName))...)
		}
		switch {
		case a.Type == ActionRestart && a.Restart == nil:
			errs = append(errs, field.Required(ap.Child("restart"), "restart is required when type is Restart"))
		case a.Type != ActionRestart && a.Restart != nil:
			errs = append(errs, field.Forbidden(ap.Child("restart"), "restart is forbidden unless type is Restart"))
		case a.Restart != nil:
			errs = append(errs, validateServiceName(ap.Child("restart", "serviceName"), string(a.Restart.ServiceName))...)
		}
	}
	return errs
}

func validateServiceName(fp *field.Path, name string) field.ErrorList {
	switch {
	case len(name) > MaxServiceName:
		return field.ErrorList{field.TooLong(fp, name, MaxServiceName)}
	case !ServiceNamePattern.MatchString(name):
		return field.ErrorList{field.Invalid(fp, name, "must be a systemd unit name with a type suffix such as .service, .socket, .mount, .target, .path, .timer, .slice or .scope")}
	}
	return nil
}

// DeclarativeData indexes every policy's declarative entries for the
// built-in rule: files by path, units by name, and the sshkey entries.
func DeclarativeData(pols []Policy) map[string]any {
	type entry = map[string]any
	files := map[string][]any{}
	units := map[string][]any{}
	var sshkey []any
	for _, p := range pols {
		for _, f := range p.Files {
			files[f.Path] = append(files[f.Path], entry{"policy": p.Name, "actions": actionsValue(f.Actions)})
		}
		for _, u := range p.Units {
			units[string(u.Name)] = append(units[string(u.Name)], entry{"policy": p.Name, "actions": actionsValue(u.Actions)})
		}
		if p.SSHKey != nil {
			sshkey = append(sshkey, entry{"policy": p.Name, "actions": actionsValue(p.SSHKey.Actions)})
		}
	}
	out := map[string]any{}
	if len(files) > 0 {
		out["files"] = files
	}
	if len(units) > 0 {
		out["units"] = units
	}
	if len(sshkey) > 0 {
		out["sshkey"] = sshkey
	}
	return out
}

// actionsValue is the JSON form of actions, as Rego sees them.
func actionsValue(actions []Action) []any {
	out := make([]any, 0, len(actions))
	for _, a := range actions {
		m := map[string]any{"type": string(a.Type)}
		if a.Reload != nil {
			m["reload"] = map[string]any{"serviceName": string(a.Reload.ServiceName)}
		}
		if a.Restart != nil {
			m["restart"] = map[string]any{"serviceName": string(a.Restart.ServiceName)}
		}
		out = append(out, m)
	}
	return out
}

func Sort(pols []Policy) {
	sort.SliceStable(pols, func(i, j int) bool { return pols[i].Name < pols[j].Name })
}

func ActionType(s string) operatorv1.NodeDisruptionPolicySpecActionType {
	return operatorv1.NodeDisruptionPolicySpecActionType(s)
}

func ReloadService(name string) *operatorv1.ReloadService {
	return &operatorv1.ReloadService{ServiceName: operatorv1.NodeDisruptionPolicyServiceName(name)}
}

func RestartService(name string) *operatorv1.RestartService {
	return &operatorv1.RestartService{ServiceName: operatorv1.NodeDisruptionPolicyServiceName(name)}
}

// ReloadAction and RestartAction build actions.
func ReloadAction(service string) Action {
	return Action{Type: ActionReload, Reload: ReloadService(service)}
}
func RestartAction(service string) Action {
	return Action{Type: ActionRestart, Restart: RestartService(service)}
}

// Revision digests one policy's content: what its NodeDisruptionPolicy
// status reports as active.
func (p *Policy) Revision() string {
	return Revision([]Policy{*p}, nil)
}

// RuleCount counts declarative entries and the "claims" rules of the Rego
// modules: the Rules column of `kubectl get ndp`.
func (p *Policy) RuleCount() int {
	n := len(p.Files) + len(p.Units)
	if p.SSHKey != nil {
		n++
	}
	for _, m := range p.Modules {
		mod, err := ast.ParseModuleWithOpts(m.Key(), m.Source, ast.ParserOptions{RegoVersion: ast.RegoV1, Capabilities: sandbox.Capabilities})
		if err != nil || mod == nil {
			continue
		}
		for _, r := range mod.Rules {
			if r.Head.Name == "claims" || (len(r.Head.Reference) > 0 && r.Head.Reference[0].Value.Compare(ast.Var("claims")) == 0) {
				n++
			}
		}
	}
	return n
}
