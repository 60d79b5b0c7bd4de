// Package simhost simulates the parts of a node that ndp-daemon reaches
// only through its own interfaces — systemd (daemon.Systemd), the OS
// updater (daemon.OSUpdater) and the reboot (daemon.Rebooter) — so that
// many daemons, the real daemon code, can run in one process (test/scale).
// Files are real: each Machine has a host root directory of its own, for
// daemon.OpenHost, and a boot-ID file that a simulated reboot changes.
package simhost

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ndp-dev/ndp/daemon"
	"github.com/ndp-dev/ndp/osupdate"
)

// UnitDir is where the daemon writes units on a simulated host.
const UnitDir = "/etc/systemd/system"

// Machine is one simulated host: a root directory, a boot ID, systemd and
// an OS updater.
type Machine struct {
	Name    string
	Dir     string
	Systemd *Systemd
	OS      *OSUpdater

	mu    sync.Mutex
	boots int
}

// NewMachine prepares a host root under dir (the core user in /etc/passwd,
// /etc/group and /etc/shadow, as on RHCOS) with the first boot's ID, and
// writes the files given (host path → contents), as Ignition did at first
// boot. restart is how long a simulated unit restart or reload takes.
func NewMachine(dir, name string, restart time.Duration, files map[string]string) (*Machine, error) {
	m := &Machine{Name: name, Dir: dir, Systemd: NewSystemd(restart), OS: &OSUpdater{}}
	seed := map[string]string{
		"/etc/passwd": "root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000:CoreOS Admin:/home/core:/bin/bash\n",
		"/etc/group":  "root:x:0:\ncore:x:1000:\n",
		"/etc/shadow": "root:*:19000:0:99999:7:::\ncore:*:19000:0:99999:7:::\n",
	}
	for p, data := range files {
		seed[p] = data
	}
	for p, data := range seed {
		path := filepath.Join(m.Root(), p)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			return nil, err
		}
	}
	for _, d := range []string{"/home/core", UnitDir} {
		if err := os.MkdirAll(filepath.Join(m.Root(), d), 0o755); err != nil {
			return nil, err
		}
	}
	return m, m.Boot()
}

// Root is the host root, for daemon.OpenHost.
func (m *Machine) Root() string { return filepath.Join(m.Dir, "root") }

// BootIDPath is the file holding the current boot's ID.
func (m *Machine) BootIDPath() string { return filepath.Join(m.Dir, "boot_id") }

// Boot starts a new boot: a new boot ID, the staged OS changes in force.
func (m *Machine) Boot() error {
	m.mu.Lock()
	m.boots++
	n := m.boots
	m.mu.Unlock()
	m.OS.boot()
	return os.WriteFile(m.BootIDPath(), []byte(fmt.Sprintf("%s-boot-%d\n", m.Name, n)), 0o644)
}

// Boots counts the boots, the first included.
func (m *Machine) Boots() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.boots
}

// Rebooter returns the daemon's Rebooter for this machine: the reboot
// request is handed to f, which simulates it (the node going down, coming
// back, the daemon starting again) and must not block.
func (m *Machine) Rebooter(f func(reason string)) daemon.Rebooter { return rebooter(f) }

type rebooter func(reason string)

func (r rebooter) Reboot(_ context.Context, reason string) error {
	r(reason)
	return nil
}

// Systemd is an in-memory systemd: every unit exists and is active;
// Restart gives it a new invocation, Reload a new state change, each after
// a fixed latency.
type Systemd struct {
	Latency time.Duration

	mu            sync.Mutex
	units         map[string]*unit
	daemonReloads int
	irreversible  []string
}

type unit struct {
	invocation       int
	stateChange      uint64
	restarts         int
	reloads          int
	enablement       string
	enablementChange int
}

// NewSystemd returns a systemd whose restarts and reloads take latency.
func NewSystemd(latency time.Duration) *Systemd {
	return &Systemd{Latency: latency, units: map[string]*unit{}}
}

var _ daemon.Systemd = (*Systemd)(nil)

func (s *Systemd) unit(name string) *unit {
	u := s.units[name]
	if u == nil {
		u = &unit{invocation: 1, stateChange: 1, enablement: "enabled"}
		s.units[name] = u
	}
	return u
}

func (s *Systemd) wait(ctx context.Context) error {
	if s.Latency <= 0 {
		return nil
	}
	t := time.NewTimer(s.Latency)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (s *Systemd) DaemonReload(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.daemonReloads++
	return nil
}

func (s *Systemd) Marker(_ context.Context, name string) (daemon.UnitMarker, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.unit(name)
	return daemon.UnitMarker{InvocationID: fmt.Sprintf("%032x", u.invocation), StateChange: u.stateChange}, nil
}

func (s *Systemd) Reload(ctx context.Context, name string) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.unit(name)
	u.reloads++
	u.stateChange++
	return nil
}

func (s *Systemd) Restart(ctx context.Context, name string) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.unit(name)
	u.restarts++
	u.invocation++
	u.stateChange++
	return nil
}

func (s *Systemd) WaitActive(context.Context, string) error { return nil }
func (s *Systemd) WaitIdle(context.Context, string) error   { return nil }

func (s *Systemd) UnitFileState(_ context.Context, name string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unit(name).enablement, nil
}

func (s *Systemd) setEnablement(units []string, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range units {
		u := s.unit(name)
		u.enablement = state
		u.enablementChange++
	}
}

func (s *Systemd) Enable(_ context.Context, units []string) error {
	s.setEnablement(units, "enabled")
	return nil
}

func (s *Systemd) Disable(_ context.Context, units []string) error {
	s.setEnablement(units, "disabled")
	return nil
}

func (s *Systemd) StartUnitIrreversibly(_ context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.irreversible = append(s.irreversible, name)
	return nil
}

// Runs tells how often a unit was restarted and reloaded.
func (s *Systemd) Runs(name string) (restarts, reloads int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.unit(name)
	return u.restarts, u.reloads
}

// DaemonReloads counts daemon-reloads.
func (s *Systemd) DaemonReloads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.daemonReloads
}

// OSUpdater stages OS changes for the next boot, in memory.
type OSUpdater struct {
	mu       sync.Mutex
	applies  int
	staged   *osupdate.Config
	running  osupdate.Config
	hasStage bool
}

var _ daemon.OSUpdater = (*OSUpdater)(nil)

func (o *OSUpdater) Check(_, _ osupdate.Config) error { return nil }

func (o *OSUpdater) Apply(_ context.Context, _, to osupdate.Config) (osupdate.Outcome, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.applies++
	o.staged, o.hasStage = &to, true
	return osupdate.Outcome{Reboot: true}, nil
}

func (o *OSUpdater) boot() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.hasStage {
		o.running, o.staged, o.hasStage = *o.staged, nil, false
	}
}

// Applies counts Apply calls; Running is the OS configuration booted.
func (o *OSUpdater) Applies() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.applies
}

func (o *OSUpdater) Running() osupdate.Config {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.running
}
