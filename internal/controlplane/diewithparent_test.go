package controlplane

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A control-plane binary started through dieWithParent's wrapper is killed
// when the process that started it dies, as a test binary killed on its
// timeout does: here a shell, killed with SIGKILL, that started a stand-in
// etcd (which records its PID and sleeps).
func TestDieWithParent(t *testing.T) {
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("no setpriv: dieWithParent leaves the binaries as they are")
	}
	assets := t.TempDir()
	pidFile := filepath.Join(assets, "etcd.pid")
	stand := "#!/bin/sh\necho $$ > " + pidFile + "\nexec sleep 300\n"
	for _, b := range envtestBinaries {
		if err := os.WriteFile(filepath.Join(assets, b), []byte(stand), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir := dieWithParent(assets)
	if dir == assets {
		t.Fatalf("no wrappers written in %s", assets)
	}
	if again := dieWithParent(assets); again != dir {
		t.Fatalf("a second call: %s, want %s", again, dir)
	}

	parent := exec.Command("/bin/sh", "-c", filepath.Join(dir, "etcd")+"; :")
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	for deadline := time.Now().Add(30 * time.Second); pid == 0; time.Sleep(50 * time.Millisecond) {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		if pid == 0 && time.Now().After(deadline) {
			t.Fatal("the stand-in etcd did not start")
		}
	}
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); err != nil {
			return // gone with its parent
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("etcd (pid %d) outlived its parent by 30 s", pid)
		}
	}
}
