package changeset

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ndp-dev/ndp/registries"
)

// Change kinds, in the order changes are sorted (and so the order in which
// their actions enter a plan).
const (
	KindFile     = "file"
	KindUnit     = "unit"
	KindSSHKey   = "sshkey"
	KindPassword = "password"
	KindOS       = "os"
	// KindStorage is a storage section Ignition applies only when a node
	// is provisioned, but that running nodes may accept (storage.luks).
	KindStorage = "storage"
)

var kindRank = map[string]int{KindFile: 0, KindUnit: 1, KindSSHKey: 2, KindPassword: 3, KindOS: 4, KindStorage: 5}

// StorageLUKS names the storage.luks change (LUKS volumes, Tang/TPM
// clevis bindings).
const StorageLUKS = "luks"

// Change operations.
const (
	OpAdded   = "added"
	OpRemoved = "removed"
	OpChanged = "changed"
)

// OS-level fields of a MachineConfig spec that the planner diffs.
const (
	FieldOSImageURL                     = "osImageURL"
	FieldBaseOSExtensionsContainerImage = "baseOSExtensionsContainerImage"
	FieldKernelArguments                = "kernelArguments"
	FieldExtensions                     = "extensions"
	FieldKernelType                     = "kernelType"
)

// Change is one difference between two rendered configs. Its fields are the
// Rego input of one element of input.changes.
type Change struct {
	// ID is unique within a change set: "file:/etc/chrony.conf",
	// "unit:foo.service", "sshkey", "password", "os:osImageURL",
	// "storage:luks".
	ID   string `json:"id"`
	Kind string `json:"kind"`
	Op   string `json:"op"`
	// Path of a file change and Dirs, its ancestor directories with a
	// trailing "/", most specific first: a policy claims a directory by
	// looking one of them up, instead of scanning its rules.
	Path string   `json:"path,omitempty"`
	Dirs []string `json:"dirs,omitempty"`
	// Name of a unit, of the OS field or of the storage section.
	Name string `json:"name,omitempty"`
	// Fields that differ: contents, mode, user, group, overwrite (files);
	// contents, enabled, mask, dropins (units).
	Fields []string `json:"fields,omitempty"`
	// Dropins whose contents differ (units).
	Dropins []string `json:"dropins,omitempty"`
	// OldDigest and NewDigest identify file contents ("sha256:...").
	OldDigest string `json:"oldDigest,omitempty"`
	NewDigest string `json:"newDigest,omitempty"`
	// Source is the MachineConfig that contributed the file or unit.
	Source string `json:"source,omitempty"`
	// Old and New values of an OS field.
	Old any `json:"old,omitempty"`
	New any `json:"new,omitempty"`
	// Added and Removed SSH keys, kernel arguments or LUKS volume names.
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
}

// Describe is the one-line human form used in reasons.
func (c *Change) Describe() string {
	var subject string
	switch c.Kind {
	case KindFile:
		subject = "file " + c.Path
	case KindUnit:
		subject = "unit " + c.Name
	case KindSSHKey:
		subject = "ssh keys"
	case KindPassword:
		subject = "password hash"
	case KindStorage:
		subject = "storage." + c.Name
	default:
		subject = c.Name
	}
	switch {
	case c.Kind == KindSSHKey:
		return fmt.Sprintf("%s: %d added, %d removed", subject, len(c.Added), len(c.Removed))
	case c.Op != OpChanged || len(c.Fields) == 0:
		return subject + ": " + c.Op
	}
	detail := strings.Join(c.Fields, ", ") + " changed"
	if len(c.Dropins) > 0 {
		detail += " (" + strings.Join(c.Dropins, ", ") + ")"
	}
	return subject + ": " + detail
}

// sortKey orders changes by kind, then path or name.
func (c *Change) sortKey() (int, string) {
	if c.Kind == KindFile {
		return kindRank[c.Kind], c.Path
	}
	return kindRank[c.Kind], c.Name
}

// Unreconcilable is a change the node cannot apply in place at all.
type Unreconcilable struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

func (u Unreconcilable) String() string { return u.Field + ": " + u.Reason }

// ChangeSet is everything that differs between two rendered configs.
type ChangeSet struct {
	From       string   `json:"from"`
	To         string   `json:"to"`
	Pool       string   `json:"pool,omitempty"`
	SingleNode bool     `json:"singleNode"`
	Changes    []Change `json:"changes"`
	// Registries is the semantic diff of registries.conf, set when that
	// file changed.
	Registries *RegistriesChange `json:"registries,omitempty"`
	// Unreconcilable changes; when present the change set is never planned.
	Unreconcilable []Unreconcilable `json:"unreconcilable,omitempty"`

	// contents are the file changes' contents (Contents), nil when the
	// change set was built without them.
	contents *contentStore
}

// RegistriesChange is the semantic diff of registries.conf. Unknown says
// why one side could not be read (the old file does not parse, or a side
// comes from a remote source): nothing about the change can then be called
// safe.
type RegistriesChange struct {
	registries.ConfigDiff
	Unknown string `json:"unknown,omitempty"`
}

func (cs *ChangeSet) Sort() {
	sort.SliceStable(cs.Changes, func(i, j int) bool {
		ri, ki := cs.Changes[i].sortKey()
		rj, kj := cs.Changes[j].sortKey()
		if ri != rj {
			return ri < rj
		}
		return ki < kj
	})
}

// Change returns the change with the given id, or nil.
func (cs *ChangeSet) Change(id string) *Change {
	for i := range cs.Changes {
		if cs.Changes[i].ID == id {
			return &cs.Changes[i]
		}
	}
	return nil
}

// ParentDirs lists the ancestor directories of an absolute path, each with
// a trailing slash, most specific first: /etc/a/b → /etc/a/, /etc/, /.
func ParentDirs(p string) []string {
	var dirs []string
	for i := strings.LastIndexByte(p, '/'); i >= 0; i = strings.LastIndexByte(p[:i], '/') {
		dirs = append(dirs, p[:i+1])
		if i == 0 {
			break
		}
	}
	return dirs
}
