// Package mcoimport turns the node disruption policy of the Machine Config
// Operator — spec.nodeDisruptionPolicy of the operator.openshift.io/v1
// MachineConfiguration "cluster" — into an equivalent NodeDisruptionPolicy,
// leaving out what ndp's built-in defaults already do.
//
// The MCO's semantics it reproduces (openshift/machine-config-operator):
//   - pkg/apihelpers/apihelpers.go MergeClusterPolicies: the user's entries
//     are merged over the MCO's defaultClusterPolicies; an entry with the
//     same path (or unit name) as a default replaces it; a user sshkey
//     policy replaces the default (None).
//   - pkg/controller/common/helpers.go FindClosestFilePolicyPathMatch: a file
//     entry covers its own path and everything beneath it (IsSubdirectory
//     cleans the entry's path and appends "/"), with or without a final
//     "/", and the longest matching entry wins.
//   - pkg/daemon/update.go calculatePostConfigChangeNodeDisruptionActionFromMCDiffs:
//     a file or unit no entry covers means a reboot; units match by exact
//     name; the sshkey policy applies to any change of the passwd section
//     (diff.passwd: SSH keys and the password hash).
//   - Special (see SpecialAction) is the MCO's own action for
//     /etc/containers/registries.conf only.
//
// The generated policy has priority 100, above the defaults' 0, so that its
// entries override ndp's defaults for the same paths exactly as the MCO's
// user entries override its defaults.
package mcoimport

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"

	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/changeset"
	"github.com/ndp-dev/ndp/planner/policy"
)

// DefaultName is the generated policy's name unless Options.Name is set.
const DefaultName = "imported-machineconfiguration"

// Options of a conversion.
type Options struct {
	// Name of the NodeDisruptionPolicy (DefaultName if empty).
	Name string
	// IncludeCovered imports the entries the defaults already cover too
	// (Special excepted: the default registries rule is its only form).
	IncludeCovered bool
}

// Entry is one entry of spec.nodeDisruptionPolicy and what became of it.
type Entry struct {
	// Field is its path in the MachineConfiguration
	// ("spec.nodeDisruptionPolicy.files[3]"), Line its line in the file
	// (0 when unknown).
	Field string
	Line  int
	// Kind is "file", "unit" or "sshkey"; Name its path or unit name
	// (as imported: cleaned).
	Kind, Name string
	Actions    []Action
	// Default names the default this entry equals (Covered) or overrides
	// (Imported), "" when there is none: "the default for
	// /etc/crio/policies"; DefaultActions are that default's actions
	// ("Reload crio.service"), "" when Default says them.
	Default, DefaultActions string
	// Note says why an entry was skipped, or what changed on import.
	Note string
}

// What names the entry: "file /etc/chrony.conf", "unit foo.service", "sshkey".
func (e Entry) What() string {
	if e.Name == "" {
		return e.Kind
	}
	return e.Kind + " " + e.Name
}

// Result of a conversion.
type Result struct {
	Source *Source
	// Policy is the NodeDisruptionPolicy; nil when nothing needs importing.
	Policy *v1alpha1.NodeDisruptionPolicy
	// Imported entries are in Policy; those with a Default override it.
	Imported []Entry
	// Covered entries are not imported: ndp's defaults already do the same.
	Covered []Entry
	// Skipped entries had no effect in the MCO (or are shadowed by another
	// entry for the same path) and are not imported.
	Skipped  []Entry
	Warnings []string
}

// ValidateName checks a NodeDisruptionPolicy name (a DNS subdomain, as
// for every cluster-scoped object).
func ValidateName(name string) error {
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return fmt.Errorf("%q is not a valid object name: %s", name, strings.Join(msgs, "; "))
	}
	return nil
}

const policyField = "spec.nodeDisruptionPolicy"

// fileEntry is a file entry being converted.
type fileEntry struct {
	Entry
	index int
	raw   string // the path as written
	key   string // planner.PathKey of the cleaned path
}

// Convert maps the MachineConfiguration's spec.nodeDisruptionPolicy onto a
// NodeDisruptionPolicy. Entries the defaults cover are left out (unless
// opts.IncludeCovered) and reported; invalid entries are errors naming the
// field and, for a file, its line.
func Convert(src *Source, opts Options) (*Result, error) {
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	if err := ValidateName(opts.Name); err != nil {
		return nil, err
	}
	spec := src.Object.Spec.NodeDisruptionPolicy
	res := &Result{Source: src}
	var errs []error
	fail := func(fld string, err error) {
		errs = append(errs, &machineconfig.InputError{Object: src.object(), Field: fld, Line: src.line(fld), Err: err})
	}

	// Files: check each, then decide against the defaults and the others.
	var files []*fileEntry
	byKey := map[string]*fileEntry{}
	for i, f := range spec.Files {
		fld := fmt.Sprintf("%s.files[%d]", policyField, i)
		e := &fileEntry{Entry: Entry{Field: fld, Line: src.line(fld), Kind: "file", Name: f.Path, Actions: f.Actions}, index: i, raw: f.Path}
		if special, ok := specialIndex(f.Actions); ok {
			if err := checkSpecial(f.Path, f.Actions); err != nil {
				fail(fmt.Sprintf("%s.actions[%d].type", fld, special), err)
				continue
			}
			d, _ := defaultFor(RegistriesConf)
			e.Default, e.DefaultActions = describeDefault(d)
			e.Note = "Special is the MCO's own registries.conf logic, which ndp's default registries rule reproduces"
			res.Covered = append(res.Covered, e.Entry)
			continue
		}
		switch {
		case f.Path == "":
			fail(fld+".path", errors.New("Required value"))
			continue
		case !strings.HasPrefix(f.Path, "/"):
			e.Note = "not an absolute path: the MCO compares it with absolute file paths, so it never applied"
			res.Skipped = append(res.Skipped, e.Entry)
			continue
		}
		clean := path.Clean(f.Path)
		if strings.HasSuffix(f.Path, "/") && clean != "/" {
			clean += "/"
		}
		if clean == "/" {
			e.Note = `"/" covers no file in the MCO (IsSubdirectory cleans it and appends "/": "//" prefixes no path), so it never applied; in ndp it would claim every file`
			res.Skipped = append(res.Skipped, e.Entry)
			continue
		}
		if clean != f.Path {
			e.Name = clean
			e.Note = fmt.Sprintf("written %q in the MachineConfiguration", f.Path)
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s: path %q imported as %q", e.Field, f.Path, clean))
		}
		if fe := entryErrors(policy.Policy{Name: "import", Files: []operatorv1.NodeDisruptionPolicySpecFile{{Path: clean, Actions: f.Actions}}}, "spec.files[0]", fld); len(fe) > 0 {
			for _, err := range fe {
				fail(err.Field, errors.New(err.ErrorBody()))
			}
			continue
		}
		e.key = changeset.PathKey(clean)
		// /etc/app and /etc/app/ are one path in ndp. In the MCO the longer
		// spelling wins for everything beneath it (FindClosestFilePolicyPathMatch
		// keeps the longest), the other applies to a file at /etc/app itself,
		// which cannot also be a directory: the longer one is kept.
		if prev, dup := byKey[e.key]; dup {
			keep, drop := prev, e
			if len(e.raw) > len(prev.raw) {
				keep, drop = e, prev
			}
			drop.Note = fmt.Sprintf("the same path as %s (%s): in the MCO the longer spelling decides everything beneath it", short(keep.Field), keep.raw)
			if planner.FormatActions(drop.Actions) != planner.FormatActions(keep.Actions) {
				res.Warnings = append(res.Warnings, fmt.Sprintf("%s (%s: %s) and %s (%s: %s) name the same path; imported %s's actions, which the MCO applies to everything beneath %s",
					short(prev.Field), prev.raw, planner.FormatActions(prev.Actions), short(e.Field), e.raw, planner.FormatActions(e.Actions), short(keep.Field), e.key))
			}
			res.Skipped = append(res.Skipped, drop.Entry)
			if keep == e {
				for j := range files {
					if files[j] == prev {
						files[j] = e
					}
				}
				byKey[e.key] = e
			}
			continue
		}
		byKey[e.key] = e
		files = append(files, e)
	}

	var out v1alpha1.NodeDisruptionPolicySpec
	for _, e := range files {
		def, defActions, covered := fileFallback(e, files)
		e.Default, e.DefaultActions = def, defActions
		if covered && !opts.IncludeCovered {
			res.Covered = append(res.Covered, e.Entry)
			continue
		}
		if covered {
			e.Note = joinNote(e.Note, "covered by the defaults, imported on request")
		}
		res.Imported = append(res.Imported, e.Entry)
		out.Files = append(out.Files, operatorv1.NodeDisruptionPolicySpecFile{Path: e.Name, Actions: e.Actions})
	}

	// Units: exact names. ndp has no default unit rule, so a unit no
	// entry names needs a reboot, as in the MCO but for its default for
	// iri-registry.service (mcoOnlyUnits).
	seenUnits := map[string]string{}
	for i, u := range spec.Units {
		fld := fmt.Sprintf("%s.units[%d]", policyField, i)
		e := Entry{Field: fld, Line: src.line(fld), Kind: "unit", Name: string(u.Name), Actions: u.Actions}
		if special, ok := specialIndex(u.Actions); ok {
			fail(fmt.Sprintf("%s.actions[%d].type", fld, special), specialError("unit "+string(u.Name)))
			continue
		}
		if fe := entryErrors(policy.Policy{Name: "import", Units: []operatorv1.NodeDisruptionPolicySpecUnit{u}}, "spec.units[0]", fld); len(fe) > 0 {
			for _, err := range fe {
				fail(err.Field, errors.New(err.ErrorBody()))
			}
			continue
		}
		if prev, dup := seenUnits[e.Name]; dup {
			fail(fld+".name", fmt.Errorf("Duplicate value: %q is also %s", e.Name, short(prev)))
			continue
		}
		seenUnits[e.Name] = fld
		if sameActions(u.Actions, actionReboot) {
			e.Default, e.DefaultActions = unclaimed, "Reboot"
			if !opts.IncludeCovered {
				res.Covered = append(res.Covered, e)
				continue
			}
			e.Note = "covered by the defaults, imported on request"
		}
		res.Imported = append(res.Imported, e)
		out.Units = append(out.Units, u)
	}

	// sshkey: the MCO applies it to every passwd change, the password hash
	// included; ndp's sshkey entry claims SSH key changes only, so a Rego
	// rule carries the same actions to the password hash.
	if acts := spec.SSHKey.Actions; len(acts) > 0 {
		fld := policyField + ".sshkey"
		e := Entry{Field: fld, Line: src.line(fld), Kind: "sshkey", Actions: acts}
		if special, ok := specialIndex(acts); ok {
			fail(fmt.Sprintf("%s.actions[%d].type", fld, special), specialError("sshkey"))
		} else if fe := entryErrors(policy.Policy{Name: "import", SSHKey: &operatorv1.NodeDisruptionPolicySpecSSHKey{Actions: acts}}, "spec.sshkey", fld); len(fe) > 0 {
			for _, err := range fe {
				fail(err.Field, errors.New(err.ErrorBody()))
			}
		} else {
			e.Default, e.DefaultActions = "the default for SSH keys and the password hash", "None"
			covered := sameActions(acts, defaultSSHKey)
			switch {
			case covered && !opts.IncludeCovered:
				res.Covered = append(res.Covered, e)
			default:
				if covered {
					e.Note = "covered by the defaults, imported on request"
				}
				e.Note = joinNote(e.Note, "also given to password-hash changes (spec.rego): the MCO's sshkey policy covers the whole passwd section")
				res.Imported = append(res.Imported, e)
				out.SSHKey = &operatorv1.NodeDisruptionPolicySpecSSHKey{Actions: acts}
				out.Rego = passwordRego(opts.Name, acts)
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(res.Imported) == 0 {
		return res, nil
	}
	out.Priority = ptr.To(v1alpha1.UserDefaultPriority)
	res.Policy = &v1alpha1.NodeDisruptionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: opts.Name},
		Spec:       out,
	}
	// What the API server and the policy controller check: entry by entry
	// it passed already, so a failure here is a bug of the conversion.
	pol := policy.FromAPI("", res.Policy, 0, 0)
	if errs := pol.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("internal error: the imported policy is invalid: %v", errs.ToAggregate())
	}
	return res, nil
}

// fileFallback is what the MCO would do, without this entry, for the files
// the entry decides, and whether that is the same as the entry: the
// default for the same path (which the entry replaces, as in
// MergeClusterPolicies), else the longest entry, default or user, above it
// (FindClosestFilePolicyPathMatch), else a reboot. Only a default can make
// an entry covered: one shadowing another user entry is imported.
func fileFallback(e *fileEntry, files []*fileEntry) (def, defActions string, covered bool) {
	if d, ok := defaultFor(e.key); ok {
		def, defActions = describeDefault(d)
		return def, defActions, sameActions(e.Actions, d.actions)
	}
	var bestUser *fileEntry
	var bestDefault *defaultRule
	best := -1
	for _, o := range files {
		if o != e && changeset.Covers(o.key, e.key) && len(o.key) > best {
			bestUser, bestDefault, best = o, nil, len(o.key)
		}
	}
	for i := range defaultFiles {
		d := &defaultFiles[i]
		// A user entry for the same path as a default replaces it.
		if k := changeset.PathKey(d.path); k != e.key && changeset.Covers(k, e.key) && len(k) > best {
			bestUser, bestDefault, best = nil, d, len(k)
		}
	}
	switch {
	case bestUser != nil:
		return "", "", false
	case bestDefault != nil:
		def, defActions = describeDefault(*bestDefault)
		return def, defActions, sameActions(e.Actions, bestDefault.actions)
	}
	return unclaimed, "Reboot", sameActions(e.Actions, actionReboot)
}

// unclaimed names the rule for a change no policy claims.
const unclaimed = "ndp's rule for a change no policy claims"

func describeDefault(d defaultRule) (phrase, actions string) {
	if d.describe != "" {
		return d.describe, ""
	}
	return "the default for " + d.path, planner.FormatActions(d.actions)
}

func sameActions(a, b []Action) bool {
	return planner.FormatActions(a) == planner.FormatActions(b)
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// short drops the spec.nodeDisruptionPolicy prefix from a field path.
func short(fld string) string {
	return strings.TrimPrefix(fld, policyField+".")
}

func specialIndex(actions []Action) (int, bool) {
	for i, a := range actions {
		if a.Type == SpecialAction {
			return i, true
		}
	}
	return 0, false
}

// checkSpecial accepts Special only as the MCO uses it: alone, on
// /etc/containers/registries.conf.
func checkSpecial(p string, actions []Action) error {
	if path.Clean(p) != RegistriesConf {
		return specialError("file " + p)
	}
	if len(actions) > 1 {
		return fmt.Errorf("Special cannot be combined with other actions: it stands for the MCO's whole registries.conf logic (reload CRI-O, drain unless the change is safe), which ndp's default registries rule reproduces; to add actions to it, write a Rego policy claiming %s", RegistriesConf)
	}
	return nil
}

func specialError(what string) error {
	return fmt.Errorf("Special is the MCO's internal action, used only by its own default for %s: the MCO's API refuses it in spec.nodeDisruptionPolicy (openshift/api operator/v1: %q is not one of Reboot, Drain, Reload, Restart, DaemonReload, None), and it has no meaning for %s", RegistriesConf, "Special", what)
}

// entryErrors validates one entry with ndp's own rules (the API's:
// planner.Policy.Validate) and names the errors by the MachineConfiguration
// field: from "spec.files[0]..." to "spec.nodeDisruptionPolicy.files[3]...".
func entryErrors(p policy.Policy, from, to string) field.ErrorList {
	errs := p.Validate()
	for _, e := range errs {
		e.Field = to + strings.TrimPrefix(e.Field, from)
	}
	return errs
}

var notIdent = regexp.MustCompile(`[^A-Za-z0-9_]`)

// passwordRego claims password-hash changes with the sshkey actions, as
// the MCO applies its sshkey policy to the whole passwd section.
func passwordRego(name string, actions []Action) string {
	var acts []string
	for _, a := range actions {
		s := fmt.Sprintf(`{"type": %q`, a.Type)
		switch {
		case a.Reload != nil:
			s += fmt.Sprintf(`, "reload": {"serviceName": %q}`, a.Reload.ServiceName)
		case a.Restart != nil:
			s += fmt.Sprintf(`, "restart": {"serviceName": %q}`, a.Restart.ServiceName)
		}
		acts = append(acts, s+"}")
	}
	return fmt.Sprintf(`# The MCO applies spec.nodeDisruptionPolicy.sshkey to every change of the
# core user's passwd entry, its password hash included (machine-config-operator
# pkg/daemon/update.go, diff.passwd); ndp's sshkey entry claims SSH key
# changes only, so this rule gives the password hash the same actions.
package ndp.policy.%s

claims contains {"change": change.id, "actions": [%s]} if {
	some change in input.changes
	change.kind == "password"
}
`, notIdent.ReplaceAllString(name, "_"), strings.Join(acts, ", "))
}
