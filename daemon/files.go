package daemon

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"

	"github.com/ndp-dev/ndp/machineconfig"
)

// CoreUser is the only user whose SSH keys and password a MachineConfig
// changes on a running node.
const CoreUser = "core"

// authorizedKeysFile is where the core user's keys from Ignition live, as
// on RHCOS 9 (sshd reads authorized_keys.d/ through a helper).
const authorizedKeysFile = "/home/core/.ssh/authorized_keys.d/ignition"

// fileUpdate is everything the files step does, computed (and checked)
// before the first write.
type fileUpdate struct {
	Writes  []hostFile
	Removes []string
	// Enable and Disable list units whose enablement the new config sets.
	Enable, Disable []string
	// PasswordHash, when set, is the core user's new hash ("!" locks it).
	PasswordHash *string
	// Units lists every unit the update writes, removes or (un)masks.
	Units []string
}

// Touched is every path the update may change: what the backup saves.
func (u *fileUpdate) Touched() []string {
	var out []string
	for _, w := range u.Writes {
		out = append(out, w.Path)
	}
	out = append(out, u.Removes...)
	if u.PasswordHash != nil {
		out = append(out, "/etc/shadow")
	}
	return out
}

// planFiles computes the files step of a move from one config to another:
// the new config's files and units written, the ones it drops removed, the
// core user's keys and password. Every path, content and owner is checked
// here, so that bad input is refused before anything is written.
func planFiles(h *Host, from, to *machineconfig.Config) (*fileUpdate, error) {
	ids, err := h.readIDs()
	if err != nil {
		return nil, err
	}
	u := &fileUpdate{}
	var errs []error
	wanted := map[string]bool{}
	for i := range to.Ignition.Storage.Files {
		f := &to.Ignition.Storage.Files[i]
		field := fmt.Sprintf("%s: spec.config.storage.files[path=%s]", to.Name, f.Path)
		if err := h.contained(f.Path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", field, err))
			continue
		}
		if src := f.Contents.Source; src != nil && *src != "" && !strings.HasPrefix(*src, "data:") {
			errs = append(errs, fmt.Errorf("%s.contents.source: remote sources are not fetched on a running node; render the contents inline", field))
			continue
		}
		data, err := machineconfig.FileContents(to, f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		uid, gid, err := ids.fileOwner(&f.Node)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", to.Name, err))
			continue
		}
		wanted[path.Clean(f.Path)] = true
		u.Writes = append(u.Writes, hostFile{Path: path.Clean(f.Path), Exists: true, Data: data, Mode: fileMode(f.Mode, 0o644), UID: uid, GID: gid})
	}
	for _, f := range from.Ignition.Storage.Files {
		if p := path.Clean(f.Path); !wanted[p] {
			if err := h.contained(p); err != nil {
				errs = append(errs, fmt.Errorf("%s: spec.config.storage.files[path=%s]: %w", from.Name, f.Path, err))
				continue
			}
			u.Removes = append(u.Removes, p)
		}
	}
	errs = append(errs, planUnits(h, u, from, to)...)
	if err := planPasswd(h, ids, u, from, to); err != nil {
		errs = append(errs, err)
	}
	return u, errors.Join(errs...)
}

func validUnitName(name string) error {
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return fmt.Errorf("invalid unit or drop-in name %q", name)
	}
	return nil
}

func planUnits(h *Host, u *fileUpdate, from, to *machineconfig.Config) []error {
	var errs []error
	old := map[string]*igntypes.Unit{}
	for i := range from.Ignition.Systemd.Units {
		old[from.Ignition.Systemd.Units[i].Name] = &from.Ignition.Systemd.Units[i]
	}
	unitFile := func(name string) string { return path.Join(h.UnitDir, name) }
	seen := map[string]bool{}
	for i := range to.Ignition.Systemd.Units {
		un := &to.Ignition.Systemd.Units[i]
		field := fmt.Sprintf("%s: spec.config.systemd.units[name=%s]", to.Name, un.Name)
		if err := validUnitName(un.Name); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", field, err))
			continue
		}
		if err := h.contained(unitFile(un.Name)); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", field, err))
			continue
		}
		seen[un.Name] = true
		u.Units = append(u.Units, un.Name)
		switch {
		case un.Mask != nil && *un.Mask:
			u.Writes = append(u.Writes, hostFile{Path: unitFile(un.Name), Exists: true, Symlink: "/dev/null"})
		case un.Contents != nil:
			u.Writes = append(u.Writes, hostFile{Path: unitFile(un.Name), Exists: true, Data: []byte(*un.Contents), Mode: 0o644})
		default:
			// Neither contents nor mask: a unit shipped with the OS,
			// only enabled or given drop-ins. Undo an old mask.
			if o := old[un.Name]; o != nil && (o.Mask != nil && *o.Mask || o.Contents != nil) {
				u.Removes = append(u.Removes, unitFile(un.Name))
			}
		}
		dropins := map[string]bool{}
		for _, d := range un.Dropins {
			if err := validUnitName(d.Name); err != nil {
				errs = append(errs, fmt.Errorf("%s.dropins: %w", field, err))
				continue
			}
			dropins[d.Name] = true
			if d.Contents != nil {
				u.Writes = append(u.Writes, hostFile{Path: unitFile(un.Name + ".d/" + d.Name), Exists: true, Data: []byte(*d.Contents), Mode: 0o644})
			}
		}
		if o := old[un.Name]; o != nil {
			for _, d := range o.Dropins {
				if !dropins[d.Name] && validUnitName(d.Name) == nil {
					u.Removes = append(u.Removes, unitFile(un.Name+".d/"+d.Name))
				}
			}
		}
		if un.Enabled != nil && (un.Mask == nil || !*un.Mask) {
			if *un.Enabled {
				u.Enable = append(u.Enable, un.Name)
			} else {
				u.Disable = append(u.Disable, un.Name)
			}
		}
	}
	for _, o := range from.Ignition.Systemd.Units {
		if seen[o.Name] || validUnitName(o.Name) != nil {
			continue
		}
		u.Units = append(u.Units, o.Name)
		if o.Enabled != nil && *o.Enabled {
			u.Disable = append(u.Disable, o.Name)
		}
		if o.Contents != nil || (o.Mask != nil && *o.Mask) {
			u.Removes = append(u.Removes, unitFile(o.Name))
		}
		for _, d := range o.Dropins {
			if validUnitName(d.Name) == nil {
				u.Removes = append(u.Removes, unitFile(o.Name+".d/"+d.Name))
			}
		}
	}
	return errs
}

func coreUser(cfg *machineconfig.Config) *igntypes.PasswdUser {
	for i := range cfg.Ignition.Passwd.Users {
		if cfg.Ignition.Passwd.Users[i].Name == CoreUser {
			return &cfg.Ignition.Passwd.Users[i]
		}
	}
	return nil
}

func sshKeys(u *igntypes.PasswdUser) []string {
	if u == nil {
		return nil
	}
	out := make([]string, 0, len(u.SSHAuthorizedKeys))
	for _, k := range u.SSHAuthorizedKeys {
		if s := strings.TrimSpace(string(k)); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func passwordHash(u *igntypes.PasswdUser) string {
	if u == nil || u.PasswordHash == nil {
		return ""
	}
	return *u.PasswordHash
}

func planPasswd(h *Host, ids *ids, u *fileUpdate, from, to *machineconfig.Config) error {
	oldU, newU := coreUser(from), coreUser(to)
	oldKeys, newKeys := sshKeys(oldU), sshKeys(newU)
	if strings.Join(oldKeys, "\n") != strings.Join(newKeys, "\n") {
		core, ok := ids.users[CoreUser]
		if !ok {
			return fmt.Errorf("%s: spec.config.passwd.users[name=core].sshAuthorizedKeys: no user core on the host", to.Name)
		}
		if len(newKeys) == 0 {
			u.Removes = append(u.Removes, authorizedKeysFile)
		} else {
			u.Writes = append(u.Writes, hostFile{Path: authorizedKeysFile, Exists: true, Data: []byte(strings.Join(newKeys, "\n") + "\n"), Mode: 0o600,
				UID: core[0], GID: core[1], DirUID: core[0], DirGID: core[1], DirMode: 0o700})
		}
	}
	if oldH, newH := passwordHash(oldU), passwordHash(newU); oldH != newH {
		if newH == "" {
			newH = "!" // no password: locked, as useradd leaves it
		}
		u.PasswordHash = &newH
	}
	return nil
}

// setPasswordHash rewrites the core user's hash in the host's /etc/shadow,
// keeping every other line and field.
func setPasswordHash(h *Host, hash string) error {
	old, err := h.Snapshot("/etc/shadow")
	if err != nil {
		return err
	}
	if !old.Exists {
		return fmt.Errorf("/etc/shadow: %w", fs.ErrNotExist)
	}
	var out bytes.Buffer
	found := false
	sc := bufio.NewScanner(bytes.NewReader(old.Data))
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Split(line, ":"); len(f) >= 2 && f[0] == CoreUser {
			f[1] = hash
			line = strings.Join(f, ":")
			found = true
		}
		out.WriteString(line)
		out.WriteByte('\n')
	}
	if !found {
		return errors.New("/etc/shadow has no line for user core")
	}
	old.Data = out.Bytes()
	return h.WriteFile(old)
}
