package changeset

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/google/go-cmp/cmp"

	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/registries"
)

// Options change what Diff computes.
type Options struct {
	// NoContents leaves the file contents out of the change set (Contents
	// is then always nil): what planning cost before policies could read
	// contents, kept as the benchmarks' floor.
	NoContents bool
}

// Diff computes the change set from one rendered config to another: files,
// units, the core user's SSH keys and password hash, the OS fields, LUKS,
// the semantic diff of registries.conf and what cannot be reconciled. The
// contents of the files whose contents changed (or that were added or
// removed) are kept for Contents.
func Diff(from, to *machineconfig.Config) (*ChangeSet, error) {
	return DiffWith(from, to, Options{})
}

// DiffWith is Diff with options.
func DiffWith(from, to *machineconfig.Config, opts Options) (*ChangeSet, error) {
	cs := &ChangeSet{From: from.Name, To: to.Name}
	if !opts.NoContents {
		cs.contents = newContentStore()
	}
	cs.Unreconcilable = unreconcilable(from, to)
	if err := diffFiles(cs, from, to); err != nil {
		return nil, err
	}
	diffUnits(cs, from, to)
	diffPasswd(cs, from, to)
	diffOS(cs, from, to)
	diffLUKS(cs, from, to)
	if err := diffRegistries(cs, from, to); err != nil {
		return nil, err
	}
	cs.Sort()
	return cs, nil
}

func (cs *ChangeSet) add(c Change, from, to *machineconfig.Config) {
	if src := to.Sources[c.ID]; src != "" {
		c.Source = src
	} else if c.Op == OpRemoved {
		c.Source = from.Sources[c.ID]
	}
	cs.Changes = append(cs.Changes, c)
}

func fileIndex(files []igntypes.File) map[string]*igntypes.File {
	m := make(map[string]*igntypes.File, len(files))
	for i := range files {
		m[files[i].Path] = &files[i]
	}
	return m
}

func diffFiles(cs *ChangeSet, from, to *machineconfig.Config) error {
	oldFiles := fileIndex(from.Ignition.Storage.Files)
	newFiles := fileIndex(to.Ignition.Storage.Files)
	for i := range to.Ignition.Storage.Files {
		nf := &to.Ignition.Storage.Files[i]
		c := Change{ID: "file:" + nf.Path, Kind: KindFile, Path: nf.Path, Dirs: ParentDirs(nf.Path)}
		of, existed := oldFiles[nf.Path]
		if !existed {
			nc, err := decode(to, nf)
			if err != nil {
				return err
			}
			c.Op, c.NewDigest = OpAdded, nc.digest
			cs.keep(c.ID, 1, nc)
			cs.add(c, from, to)
			continue
		}
		fields, oc, nc, err := fileFields(from, to, of, nf)
		if err != nil {
			return err
		}
		if len(fields) == 0 {
			continue
		}
		c.Op, c.Fields = OpChanged, fields
		if oc != nil {
			c.OldDigest, c.NewDigest = oc.digest, nc.digest
			cs.keep(c.ID, 0, oc)
			cs.keep(c.ID, 1, nc)
		}
		cs.add(c, from, to)
	}
	for i := range from.Ignition.Storage.Files {
		of := &from.Ignition.Storage.Files[i]
		if _, kept := newFiles[of.Path]; kept {
			continue
		}
		oc, err := decode(from, of)
		if err != nil {
			return err
		}
		id := "file:" + of.Path
		cs.keep(id, 0, oc)
		cs.add(Change{ID: id, Kind: KindFile, Op: OpRemoved, Path: of.Path, Dirs: ParentDirs(of.Path), OldDigest: oc.digest}, from, to)
	}
	return nil
}

// keep records a side of a file change's contents, when the change set
// keeps contents.
func (cs *ChangeSet) keep(id string, side int, d *decoded) {
	if cs.contents != nil {
		cs.contents.keep(id, side, d.data, d.remote)
	}
}

// fileFields lists which of contents, mode, user, group, overwrite differ;
// when the contents differ, both sides decoded.
func fileFields(fromCfg, toCfg *machineconfig.Config, of, nf *igntypes.File) (fields []string, oc, nc *decoded, err error) {
	if oc, nc, err = changedContents(fromCfg, toCfg, of, nf); err != nil {
		return nil, nil, nil, err
	}
	if oc != nil {
		fields = append(fields, "contents")
	}
	if fileMode(of.Mode) != fileMode(nf.Mode) {
		fields = append(fields, "mode")
	}
	if owner(of.User.ID, of.User.Name) != owner(nf.User.ID, nf.User.Name) {
		fields = append(fields, "user")
	}
	if owner(of.Group.ID, of.Group.Name) != owner(nf.Group.ID, nf.Group.Name) {
		fields = append(fields, "group")
	}
	if overwrite(of.Overwrite) != overwrite(nf.Overwrite) {
		fields = append(fields, "overwrite")
	}
	return fields, oc, nc, nil
}

// changedContents compares decoded contents, so that plain and base64 (or
// gzip) encodings of the same bytes are no change, and returns both sides
// when they differ (nil when they do not). Identical sources are compared
// without decoding: the common case in a 2,000-file config.
func changedContents(fromCfg, toCfg *machineconfig.Config, of, nf *igntypes.File) (oc, nc *decoded, err error) {
	o, n := of.Contents, nf.Contents
	if deref(o.Source) == deref(n.Source) && deref(o.Compression) == deref(n.Compression) &&
		deref(o.Verification.Hash) == deref(n.Verification.Hash) && len(o.HTTPHeaders) == 0 && len(n.HTTPHeaders) == 0 {
		return nil, nil, nil
	}
	if oc, err = decode(fromCfg, of); err != nil {
		return nil, nil, err
	}
	if nc, err = decode(toCfg, nf); err != nil {
		return nil, nil, err
	}
	if oc.digest == nc.digest {
		return nil, nil, nil
	}
	return oc, nc, nil
}

// decoded is a file's contents, decoded once: the digest that identifies
// them and, for inline data, the bytes.
type decoded struct {
	digest string
	data   []byte
	remote bool
}

// decode identifies a file's contents: the sha256 of the decoded bytes for
// inline data, or the source URL and its verification hash for a remote
// source, which the planner cannot fetch.
func decode(cfg *machineconfig.Config, f *igntypes.File) (*decoded, error) {
	src := deref(f.Contents.Source)
	if src != "" && !strings.HasPrefix(src, "data:") {
		// Everything that decides what is fetched and written.
		id := "url:" + src
		if h := deref(f.Contents.Verification.Hash); h != "" {
			id += "#" + h
		}
		if c := deref(f.Contents.Compression); c != "" {
			id += ";compression=" + c
		}
		if len(f.Contents.HTTPHeaders) > 0 {
			b, _ := json.Marshal(f.Contents.HTTPHeaders)
			sum := sha256.Sum256(b)
			id += ";headers=sha256:" + hex.EncodeToString(sum[:])
		}
		return &decoded{digest: id, remote: true}, nil
	}
	key := sourceKey{src, deref(f.Contents.Compression)}
	if len(src) >= bigContents {
		if d, ok := bigDecoded.get(key); ok {
			return d, nil
		}
	}
	data, err := fileContents(cfg, f)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	d := &decoded{digest: "sha256:" + hex.EncodeToString(sum[:]), data: data}
	if len(src) >= bigContents {
		bigDecoded.put(key, d)
	}
	return d, nil
}

func fileContents(cfg *machineconfig.Config, f *igntypes.File) ([]byte, error) {
	return machineconfig.FileContents(cfg, f)
}

func fileMode(m *int) int {
	if m == nil {
		return 0o644 // Ignition's default for files
	}
	return *m
}

// owner normalises an Ignition user or group: unset and "root" are uid 0.
func owner(id *int, name *string) string {
	switch {
	case id != nil:
		return "id:" + strconv.Itoa(*id)
	case name != nil && *name != "" && *name != "root":
		return "name:" + *name
	default:
		return "id:0"
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func diffUnits(cs *ChangeSet, from, to *machineconfig.Config) {
	oldUnits := make(map[string]*igntypes.Unit, len(from.Ignition.Systemd.Units))
	for i := range from.Ignition.Systemd.Units {
		oldUnits[from.Ignition.Systemd.Units[i].Name] = &from.Ignition.Systemd.Units[i]
	}
	seen := make(map[string]bool, len(to.Ignition.Systemd.Units))
	for i := range to.Ignition.Systemd.Units {
		nu := &to.Ignition.Systemd.Units[i]
		seen[nu.Name] = true
		c := Change{ID: "unit:" + nu.Name, Kind: KindUnit, Name: nu.Name}
		ou, existed := oldUnits[nu.Name]
		if !existed {
			c.Op = OpAdded
			cs.add(c, from, to)
			continue
		}
		if deref(ou.Contents) != deref(nu.Contents) {
			c.Fields = append(c.Fields, "contents")
		}
		if !sameBoolPtr(ou.Enabled, nu.Enabled) {
			c.Fields = append(c.Fields, "enabled")
		}
		if deref(ou.Mask) != deref(nu.Mask) {
			c.Fields = append(c.Fields, "mask")
		}
		if c.Dropins = dropinChanges(ou.Dropins, nu.Dropins); len(c.Dropins) > 0 {
			c.Fields = append(c.Fields, "dropins")
		}
		if len(c.Fields) > 0 {
			c.Op = OpChanged
			cs.add(c, from, to)
		}
	}
	for i := range from.Ignition.Systemd.Units {
		if ou := &from.Ignition.Systemd.Units[i]; !seen[ou.Name] {
			cs.add(Change{ID: "unit:" + ou.Name, Kind: KindUnit, Op: OpRemoved, Name: ou.Name}, from, to)
		}
	}
}

// sameBoolPtr keeps Ignition's tri-state: unset leaves a unit's enablement
// alone, false disables it.
func sameBoolPtr(a, b *bool) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// dropinChanges names the drop-ins added, removed or changed, sorted.
func dropinChanges(old, new []igntypes.Dropin) []string {
	contents := make(map[string]string, len(old))
	for _, d := range old {
		contents[d.Name] = deref(d.Contents)
	}
	var changed []string
	for _, d := range new {
		oc, ok := contents[d.Name]
		if !ok || oc != deref(d.Contents) {
			changed = append(changed, d.Name)
		}
		delete(contents, d.Name)
	}
	for name := range contents {
		changed = append(changed, name)
	}
	sort.Strings(changed)
	return changed
}

func coreUser(cfg *machineconfig.Config) *igntypes.PasswdUser {
	for i := range cfg.Ignition.Passwd.Users {
		if cfg.Ignition.Passwd.Users[i].Name == "core" {
			return &cfg.Ignition.Passwd.Users[i]
		}
	}
	return nil
}

func diffPasswd(cs *ChangeSet, from, to *machineconfig.Config) {
	oc, nc := coreUser(from), coreUser(to)
	var oldKeys, newKeys []string
	var oldHash, newHash string
	if oc != nil {
		oldKeys, oldHash = sshKeys(oc), deref(oc.PasswordHash)
	}
	if nc != nil {
		newKeys, newHash = sshKeys(nc), deref(nc.PasswordHash)
	}
	if added, removed := setDiff(oldKeys, newKeys); len(added)+len(removed) > 0 {
		op := OpChanged
		switch {
		case len(oldKeys) == 0:
			op = OpAdded
		case len(newKeys) == 0:
			op = OpRemoved
		}
		cs.add(Change{ID: "sshkey", Kind: KindSSHKey, Op: op, Name: "sshkey", Added: added, Removed: removed}, from, to)
	}
	if oldHash != newHash {
		op := OpChanged
		switch {
		case oldHash == "":
			op = OpAdded
		case newHash == "":
			op = OpRemoved
		}
		cs.add(Change{ID: "password", Kind: KindPassword, Op: op, Name: "password"}, from, to)
	}
}

func sshKeys(u *igntypes.PasswdUser) []string {
	keys := make([]string, 0, len(u.SSHAuthorizedKeys))
	for _, k := range u.SSHAuthorizedKeys {
		if s := strings.TrimSpace(string(k)); s != "" {
			keys = append(keys, s)
		}
	}
	return keys
}

// setDiff returns the sorted elements only in b (added) and only in a
// (removed).
func setDiff(a, b []string) (added, removed []string) {
	inA := make(map[string]bool, len(a))
	for _, s := range a {
		inA[s] = true
	}
	inB := make(map[string]bool, len(b))
	for _, s := range b {
		inB[s] = true
		if !inA[s] {
			added = append(added, s)
		}
	}
	for _, s := range a {
		if !inB[s] {
			removed = append(removed, s)
		}
	}
	sort.Strings(added)
	sort.Strings(removed)
	return slices.Compact(added), slices.Compact(removed)
}

// diffLUKS reports a change of storage.luks as one change naming the
// volumes added, removed or changed. Like the MCO, ndp accepts it: Ignition
// only sets LUKS up (and binds Tang/TPM) when a node is provisioned, so the
// default policy plans it as None.
func diffLUKS(cs *ChangeSet, from, to *machineconfig.Config) {
	o, n := from.Ignition.Storage.Luks, to.Ignition.Storage.Luks
	if cmp.Equal(o, n, equateEmpty) {
		return
	}
	old := make(map[string]int, len(o))
	for i, l := range o {
		old[l.Name] = i
	}
	c := Change{ID: KindStorage + ":" + StorageLUKS, Kind: KindStorage, Op: OpChanged, Name: StorageLUKS}
	switch {
	case len(o) == 0:
		c.Op = OpAdded
	case len(n) == 0:
		c.Op = OpRemoved
	}
	seen := make(map[string]bool, len(n))
	for _, l := range n {
		seen[l.Name] = true
		if i, ok := old[l.Name]; !ok || !cmp.Equal(o[i], l, equateEmpty) {
			c.Added = append(c.Added, l.Name)
		}
	}
	for _, l := range o {
		if !seen[l.Name] {
			c.Removed = append(c.Removed, l.Name)
		}
	}
	sort.Strings(c.Added)
	sort.Strings(c.Removed)
	cs.add(c, from, to)
}

func diffOS(cs *ChangeSet, from, to *machineconfig.Config) {
	osChange := func(field string, oldV, newV any) Change {
		op := OpChanged
		if isZero(oldV) {
			op = OpAdded
		} else if isZero(newV) {
			op = OpRemoved
		}
		return Change{ID: "os:" + field, Kind: KindOS, Op: op, Name: field, Old: oldV, New: newV}
	}
	o, n := from.Spec, to.Spec
	if o.OSImageURL != n.OSImageURL {
		cs.add(osChange(FieldOSImageURL, o.OSImageURL, n.OSImageURL), from, to)
	}
	if o.BaseOSExtensionsContainerImage != n.BaseOSExtensionsContainerImage {
		cs.add(osChange(FieldBaseOSExtensionsContainerImage, o.BaseOSExtensionsContainerImage, n.BaseOSExtensionsContainerImage), from, to)
	}
	// Kernel arguments are order-sensitive: the kernel sees them in order.
	if !slices.Equal(o.KernelArguments, n.KernelArguments) {
		c := osChange(FieldKernelArguments, stringList(o.KernelArguments), stringList(n.KernelArguments))
		c.Added, c.Removed = setDiff(o.KernelArguments, n.KernelArguments)
		cs.add(c, from, to)
	}
	// Extensions are a set: listing them in another order installs the same.
	oe, ne := sortedSet(o.Extensions), sortedSet(n.Extensions)
	if !slices.Equal(oe, ne) {
		c := osChange(FieldExtensions, stringList(oe), stringList(ne))
		c.Added, c.Removed = setDiff(oe, ne)
		cs.add(c, from, to)
	}
	if kernelType(o.KernelType) != kernelType(n.KernelType) {
		c := osChange(FieldKernelType, kernelType(o.KernelType), kernelType(n.KernelType))
		c.Op = OpChanged
		cs.add(c, from, to)
	}
}

// overwrite reads a file's overwrite with the rendering's default: the
// MCO's rendering (and ndp's, render.Merge) sets overwrite: true on every
// file without it, so a config rendered before that default and one
// rendered after it differ by nothing a node would do (the daemon always
// writes the file).
func overwrite(o *bool) bool {
	return o == nil || *o
}

// kernelType treats "" as "default", as the MCO does.
func kernelType(t string) string {
	if t == "" {
		return "default"
	}
	return t
}

func sortedSet(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return slices.Compact(out)
}

// stringList gives Rego a list even when empty.
func stringList(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func isZero(v any) bool {
	switch x := v.(type) {
	case string:
		return x == ""
	case []string:
		return len(x) == 0
	}
	return v == nil
}

// diffRegistries adds the semantic diff of registries.conf when that file
// is part of the change set.
func diffRegistries(cs *ChangeSet, from, to *machineconfig.Config) error {
	if cs.Change("file:"+registries.ConfPath) == nil {
		return nil
	}
	rc := &RegistriesChange{}
	oldConf, oldUnknown, err := registriesConf(from)
	if err != nil {
		// The old side is what nodes run today; if it cannot be read, no
		// change from it can be shown to be safe, but it can be planned.
		rc.Unknown = "old " + registries.ConfPath + ": " + err.Error()
	} else if oldUnknown != "" {
		rc.Unknown = oldUnknown
	}
	newConf, newUnknown, err := registriesConf(to)
	if err != nil {
		return err
	}
	if newUnknown != "" {
		rc.Unknown = newUnknown
	}
	if rc.Unknown == "" {
		rc.ConfigDiff = registries.Diff(oldConf, newConf)
	}
	cs.Registries = rc
	return nil
}

// registriesConf parses a config's registries.conf; nil when absent. A
// remote source cannot be read: it is reported as unknown.
func registriesConf(cfg *machineconfig.Config) (*registries.Config, string, error) {
	for i := range cfg.Ignition.Storage.Files {
		f := &cfg.Ignition.Storage.Files[i]
		if f.Path != registries.ConfPath {
			continue
		}
		if src := deref(f.Contents.Source); src != "" && !strings.HasPrefix(src, "data:") {
			return nil, registries.ConfPath + " comes from a remote source and cannot be inspected", nil
		}
		data, err := fileContents(cfg, f)
		if err != nil {
			return nil, "", err
		}
		conf, err := registries.Parse(data)
		if err != nil {
			return nil, "", &machineconfig.InputError{Object: cfg.Name, Field: fmt.Sprintf("spec.config.storage.files[path=%s]", registries.ConfPath), Err: err}
		}
		return conf, "", nil
	}
	return nil, "", nil
}
