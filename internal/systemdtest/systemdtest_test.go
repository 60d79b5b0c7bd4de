package systemdtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The recipe itself: a unit started through the user manager runs, and its
// invocation is traced.
func TestUserManagerRunsUnits(t *testing.T) {
	dir := t.TempDir()
	m, err := Start(filepath.Join(dir, "run"), filepath.Join(dir, "config"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	trace := filepath.Join(dir, "trace")
	unit := "[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/sh -c 'echo $INVOCATION_ID >> " + trace + "'\n"
	if err := os.WriteFile(filepath.Join(m.UnitDir(), "probe.service"), []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.Systemctl("daemon-reload"); err != nil {
		t.Fatal(err)
	}
	if err := m.Systemctl("start", "probe.service"); err != nil {
		t.Fatal(err)
	}
	id, err := m.Show("probe.service", "InvocationID")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(trace)
	if err != nil || strings.TrimSpace(string(b)) != id || id == "" {
		t.Fatalf("trace %q (%v), InvocationID %q", b, err, id)
	}
	// Its units live in a cgroup of its own, apart from other managers'.
	if cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", m.cmd.Process.Pid)); err != nil || !strings.Contains(string(cg), "/ndp-systemdtest-") {
		t.Errorf("the manager's cgroups %q (%v) are not its own", cg, err)
	}
	m.Stop()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(m.Socket()); err != nil {
			return
		}
		if m.Systemctl("is-system-running") != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the manager still answers after Stop")
}

// Two managers whose runtime directories have the same name (every node of
// a test calls its "run") still get cgroups of their own: sharing one, they
// remove each other's unit cgroups (219/CGROUP).
func TestManagersGetCgroupsOfTheirOwn(t *testing.T) {
	var cgroups []string
	for i := range 2 {
		dir := filepath.Join(t.TempDir(), fmt.Sprint(i))
		m, err := Start(filepath.Join(dir, "run"), filepath.Join(dir, "config"))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Stop()
		cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", m.cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(cg), "/ndp-systemdtest-") {
			t.Fatalf("manager %d shares the test's cgroups: %s", i, cg)
		}
		cgroups = append(cgroups, string(cg))
	}
	if cgroups[0] == cgroups[1] {
		t.Errorf("both managers are in %s", cgroups[0])
	}
}
