package daemon

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
)

// StateDir holds the daemon's own files on the host: the journal, the
// current config, the backup of what an update overwrites. The planner
// refuses any MachineConfig that writes there.
const StateDir = ndpmcv1.DaemonStateDir

// Host is the node's file system under a root directory (/ in production).
// Every path goes through an os.Root, so that no path, symlink or ".."
// in a MachineConfig can reach outside it.
type Host struct {
	// Path is the host root on the daemon's file system.
	Path string
	// UnitDir is where unit files go, as a host path
	// (/etc/systemd/system for the system manager).
	UnitDir string

	root *os.Root
}

// OpenHost opens the host root.
func OpenHost(path, unitDir string) (*Host, error) {
	r, err := os.OpenRoot(path)
	if err != nil {
		return nil, fmt.Errorf("opening the host root: %w", err)
	}
	return &Host{Path: path, UnitDir: unitDir, root: r}, nil
}

// Close releases the root.
func (h *Host) Close() error { return h.root.Close() }

// rel turns a host path into a path relative to the root, refusing any
// that is not absolute or that cleaning would take outside the root.
func rel(path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("path %q is not absolute", path)
	}
	r := strings.TrimPrefix(filepath.Clean(path), "/")
	if r == "" || !filepath.IsLocal(r) {
		return "", fmt.Errorf("path %q is outside the host root after cleaning", path)
	}
	return r, nil
}

// contained checks, before anything is written, that a path resolves
// inside the root: a symlink on the way that leads out is refused.
func (h *Host) contained(path string) error {
	r, err := rel(path)
	if err != nil {
		return err
	}
	if _, err := h.root.Stat(filepath.Dir(r)); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("path %q resolves outside the host root: %w", path, err)
	}
	return nil
}

// ReadFile reads a host file.
func (h *Host) ReadFile(path string) ([]byte, error) {
	r, err := rel(path)
	if err != nil {
		return nil, err
	}
	return h.root.ReadFile(r)
}

// hostFile is one file as it should be (or was) on the host.
type hostFile struct {
	Path    string      `json:"path"`
	Exists  bool        `json:"exists"`
	Symlink string      `json:"symlink,omitempty"`
	Mode    os.FileMode `json:"mode,omitempty"`
	UID     int         `json:"uid"`
	GID     int         `json:"gid"`
	Data    []byte      `json:"data,omitempty"`
	// DirOwner owns the parent directories this file needs, if created.
	DirUID, DirGID int
	DirMode        os.FileMode
}

// WriteFile writes a file atomically: a temporary file beside it, fsync,
// mode and owner, rename over the target, fsync of the directory. A crash
// leaves the old file or the new one, never a mix.
func (h *Host) WriteFile(f hostFile) error {
	r, err := rel(f.Path)
	if err != nil {
		return err
	}
	dir := filepath.Dir(r)
	if err := h.mkdirAll(dir, f.DirMode, f.DirUID, f.DirGID); err != nil {
		return fmt.Errorf("creating the directory of %s: %w", f.Path, err)
	}
	tmp := filepath.Join(dir, "."+filepath.Base(r)+".ndp-new")
	_ = h.root.Remove(tmp)
	if f.Symlink != "" {
		if err := h.root.Symlink(f.Symlink, tmp); err != nil {
			return fmt.Errorf("writing %s: %w", f.Path, err)
		}
		if err := h.root.Lchown(tmp, f.UID, f.GID); err != nil {
			return fmt.Errorf("writing %s: %w", f.Path, err)
		}
	} else if err := h.writeTemp(tmp, f); err != nil {
		_ = h.root.Remove(tmp)
		return fmt.Errorf("writing %s: %w", f.Path, err)
	}
	if err := h.root.Rename(tmp, r); err != nil {
		_ = h.root.Remove(tmp)
		return fmt.Errorf("writing %s: %w", f.Path, err)
	}
	return h.syncDir(dir)
}

func (h *Host) writeTemp(tmp string, f hostFile) error {
	out, err := h.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = out.Write(f.Data)
	if err == nil {
		err = out.Chown(f.UID, f.GID)
	}
	if err == nil {
		// After chown, which clears setuid bits.
		err = out.Chmod(f.Mode)
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

func (h *Host) mkdirAll(dir string, mode os.FileMode, uid, gid int) error {
	if dir == "." {
		return nil
	}
	if fi, err := h.root.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("/%s is not a directory", dir)
		}
		return nil
	}
	if err := h.mkdirAll(filepath.Dir(dir), mode, uid, gid); err != nil {
		return err
	}
	if mode == 0 {
		mode = 0o755
	}
	if err := h.root.Mkdir(dir, mode); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if err := h.root.Chmod(dir, mode); err != nil {
		return err
	}
	return h.root.Chown(dir, uid, gid)
}

func (h *Host) syncDir(dir string) error {
	d, err := h.root.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Remove removes a file (a symlink itself, not its target); a missing file
// is already removed.
func (h *Host) Remove(path string) error {
	r, err := rel(path)
	if err != nil {
		return err
	}
	if err := h.root.Remove(r); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing %s: %w", path, err)
	}
	return h.syncDir(filepath.Dir(r))
}

// Snapshot reads a file as it is now, for the backup.
func (h *Host) Snapshot(path string) (hostFile, error) {
	r, err := rel(path)
	if err != nil {
		return hostFile{}, err
	}
	out := hostFile{Path: path}
	fi, err := h.root.Lstat(r)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	out.Exists, out.Mode = true, fi.Mode()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		out.UID, out.GID = int(st.Uid), int(st.Gid)
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		out.Symlink, err = h.root.Readlink(r)
	case fi.Mode().IsRegular():
		out.Data, err = h.root.ReadFile(r)
	default:
		err = fmt.Errorf("%s is a %s, not a file", path, fi.Mode().Type())
	}
	out.Mode = fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
	return out, err
}

// Restore puts a snapshot back.
func (h *Host) Restore(f hostFile) error {
	if !f.Exists {
		return h.Remove(f.Path)
	}
	return h.WriteFile(f)
}

// WriteJSON writes a state file atomically.
func (h *Host) WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return h.WriteFile(hostFile{Path: path, Exists: true, Mode: 0o600, Data: append(b, '\n'), DirMode: 0o700})
}

// ReadJSON reads a state file; found is false when there is none.
func (h *Host) ReadJSON(path string, v any) (found bool, err error) {
	b, err := h.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return true, fmt.Errorf("%s on the host is corrupt: %w", path, err)
	}
	return true, nil
}

// fileMode converts an Ignition mode (permission bits and setuid, setgid,
// sticky in octal) to Go's.
func fileMode(m *int, def int) os.FileMode {
	v := def
	if m != nil {
		v = *m
	}
	mode := os.FileMode(v & 0o777)
	if v&0o4000 != 0 {
		mode |= os.ModeSetuid
	}
	if v&0o2000 != 0 {
		mode |= os.ModeSetgid
	}
	if v&0o1000 != 0 {
		mode |= os.ModeSticky
	}
	return mode
}

// ids maps the host's user and group names to numbers, from the host
// root's /etc/passwd and /etc/group (not the daemon's own).
type ids struct {
	users, groups map[string][2]int // name → uid, primary gid (groups: gid)
}

func (h *Host) readIDs() (*ids, error) {
	out := &ids{users: map[string][2]int{"root": {0, 0}}, groups: map[string][2]int{"root": {0, 0}}}
	for file, m := range map[string]map[string][2]int{"/etc/passwd": out.users, "/etc/group": out.groups} {
		b, err := h.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			f := strings.Split(sc.Text(), ":")
			if len(f) < 4 || strings.HasPrefix(f[0], "#") {
				continue
			}
			id, err1 := strconv.Atoi(f[2])
			gid, err2 := strconv.Atoi(f[3])
			if err1 != nil {
				continue
			}
			if err2 != nil {
				gid = id
			}
			if file == "/etc/group" {
				gid = id
			}
			m[f[0]] = [2]int{id, gid}
		}
	}
	return out, nil
}

func (i *ids) resolve(field string, id *int, name *string, table map[string][2]int, what string) (int, error) {
	switch {
	case id != nil:
		return *id, nil
	case name != nil && *name != "":
		v, ok := table[*name]
		if !ok {
			return 0, fmt.Errorf("%s: no %s %q on the host", field, what, *name)
		}
		return v[0], nil
	}
	return 0, nil
}

// fileOwner resolves an Ignition file's user and group.
func (i *ids) fileOwner(f *igntypes.Node) (uid, gid int, err error) {
	field := fmt.Sprintf("spec.config.storage.files[path=%s]", f.Path)
	if uid, err = i.resolve(field+".user", f.User.ID, f.User.Name, i.users, "user"); err != nil {
		return 0, 0, err
	}
	gid, err = i.resolve(field+".group", f.Group.ID, f.Group.Name, i.groups, "group")
	return uid, gid, err
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
