// Package systemdtest runs a real systemd user manager for tests, in a
// private mount namespace (docs/design.md#testing): the machines here run as root but
// were not booted with systemd, and a user manager only needs its own
// /run/systemd. Tests talk to it over D-Bus exactly as the node daemon
// talks to the system manager in production.
package systemdtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ndp-dev/ndp/internal/output"
)

// Binary is the systemd manager; Debian ships it here.
const Binary = "/lib/systemd/systemd"

// Manager is a running systemd user manager.
type Manager struct {
	// RuntimeDir is its XDG_RUNTIME_DIR: the private D-Bus socket is
	// RuntimeDir/systemd/private.
	RuntimeDir string
	// ConfigHome is its XDG_CONFIG_HOME: unit files go in
	// ConfigHome/systemd/user (UnitDir).
	ConfigHome string

	cmd     *exec.Cmd
	log     *output.Buffer
	cgroups []string // created for this manager, removed by Stop
	done    chan struct{}
}

// Start runs a user manager whose runtime directory is runtimeDir and
// whose configuration home is configHome (both created if missing), and
// waits until its private D-Bus socket accepts connections.
func Start(runtimeDir, configHome string) (*Manager, error) {
	if _, err := os.Stat(Binary); err != nil {
		return nil, fmt.Errorf("systemd is needed for these tests (apt-get install systemd): %w", err)
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("a private mount namespace for systemd needs root")
	}
	m := &Manager{RuntimeDir: runtimeDir, ConfigHome: configHome, log: &output.Buffer{}, done: make(chan struct{})}
	for _, d := range []string{runtimeDir, m.UnitDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	// Each manager gets a cgroup of its own: a user manager builds its unit
	// tree (app.slice/<unit>) under its own cgroup, and two managers in one
	// cgroup restarting a unit of the same name at once remove each other's
	// cgroups (a unit then fails with status 219/CGROUP).
	m.cgroups = ownCgroups()
	join := ""
	for _, cg := range m.cgroups {
		join += "echo $$ > " + filepath.Join(cg, "cgroup.procs") + " 2>/dev/null; "
	}
	// The manager gets a tmpfs of its own on /run/systemd (so it does not
	// see the host's, nor the host its), then replaces the shell.
	m.cmd = exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c",
		join+"mount -t tmpfs tmpfs /run/systemd && mkdir -p /run/systemd/system && exec "+Binary+" --user")
	m.cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+runtimeDir, "XDG_CONFIG_HOME="+configHome, "SYSTEMD_LOG_LEVEL=info", "SYSTEMD_LOG_TARGET=console")
	m.cmd.Stdout, m.cmd.Stderr = m.log, m.log
	// Its own process group, so that Stop takes its units with it.
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := m.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting systemd --user: %w", err)
	}
	go func() { _ = m.cmd.Wait(); close(m.done) }()
	deadline := time.Now().Add(60 * time.Second) // a loaded 2-core machine
	for {
		if _, err := os.Stat(m.Socket()); err == nil {
			// Up once its startup jobs are done (is-system-running says
			// "offline" without a session bus, so ask for the property).
			if state, err := m.Show("", "SystemState"); err == nil && (state == "running" || state == "degraded") {
				return m, nil
			}
		}
		select {
		case <-m.done:
			return nil, fmt.Errorf("systemd --user exited: %s", m.log.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			m.Stop()
			return nil, fmt.Errorf("systemd --user did not start within a minute: %s", m.log.String())
		}
	}
}

// Socket is the manager's private D-Bus socket.
func (m *Manager) Socket() string { return filepath.Join(m.RuntimeDir, "systemd", "private") }

// Address is the D-Bus address of the manager.
func (m *Manager) Address() string { return "unix:path=" + m.Socket() }

// UnitDir is where the manager reads the administrator's unit files.
func (m *Manager) UnitDir() string { return filepath.Join(m.ConfigHome, "systemd", "user") }

// Systemctl runs `systemctl --user args...` against the manager.
func (m *Manager) Systemctl(args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "systemctl", append([]string{"--user"}, args...)...)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+m.RuntimeDir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("systemctl --user %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// Show returns one property of a unit (of the manager if unit is empty), as `systemctl show -p` prints it.
func (m *Manager) Show(unit, property string) (string, error) {
	args := []string{"--user", "show", "--value", "-p", property}
	if unit != "" {
		args = append(args, unit)
	}
	cmd := exec.Command("systemctl", args...)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+m.RuntimeDir)
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// Status is `systemctl --user status unit`, for a failing test's log.
func (m *Manager) Status(unit string) string {
	cmd := exec.Command("systemctl", "--user", "status", "--no-pager", "--full", unit)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+m.RuntimeDir)
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// Log is what the manager printed (its own log: units started, failed...).
func (m *Manager) Log() string { return m.log.String() }

// Stop kills the manager and its units, and waits for it.
func (m *Manager) Stop() {
	if m.cmd.Process != nil {
		_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
	}
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
	}
	for _, cg := range m.cgroups {
		removeCgroup(cg)
	}
}

// ownCgroups creates, beside this process's cgroup in each hierarchy that
// tracks processes for systemd (name=systemd in a hybrid layout, the
// unified one), a child cgroup for a manager; where that is not possible
// the manager shares this process's cgroup. The name is unique within the
// process: managers of one test all have a runtime directory named "run",
// and a name taken from it made every manager after the first share.
func ownCgroups() []string {
	name := strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(managers.Add(1), 10)
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		var root string
		switch {
		case f[1] == "name=systemd":
			root = "/sys/fs/cgroup/systemd"
		case f[0] == "0" && f[1] == "":
			root = "/sys/fs/cgroup/unified"
			if _, err := os.Stat(root); err != nil {
				root = "/sys/fs/cgroup" // cgroup v2 only
			}
		default:
			continue
		}
		dir := filepath.Join(root, f[2], "ndp-systemdtest-"+name)
		if err := os.Mkdir(dir, 0o755); err == nil {
			out = append(out, dir)
		}
	}
	return out
}

// managers counts the managers this process started, naming their cgroups.
var managers atomic.Int64

// removeCgroup removes a cgroup and what the manager created below it,
// deepest first (a cgroup is removed with rmdir once it is empty).
func removeCgroup(dir string) {
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = syscall.Rmdir(dirs[i])
	}
}
