package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/ndp-dev/ndp/internal/durablefile"
)

// Rebooter reboots the node. It returns once the reboot is under way; the
// daemon then waits to be stopped by it.
type Rebooter interface {
	Reboot(ctx context.Context, reason string) error
}

// SystemdRebooter queues systemd's reboot job, as `systemctl reboot` does.
type SystemdRebooter struct{ Systemd Systemd }

func (r SystemdRebooter) Reboot(ctx context.Context, _ string) error {
	return r.Systemd.StartUnitIrreversibly(ctx, "reboot.target")
}

// RecordingRebooter records each reboot request as a line of a file instead
// of rebooting: where no real reboot can happen (tests, a local cluster),
// the harness reads the file, stops the daemon and changes its boot ID.
type RecordingRebooter struct{ Path string }

func (r RecordingRebooter) Reboot(_ context.Context, reason string) error {
	return durablefile.AppendJSONLine(r.Path, map[string]string{"reboot": reason, "at": time.Now().UTC().Format(time.RFC3339Nano)})
}

// OSConfig is the part of a MachineConfig that the OS updater applies.
type OSConfig struct {
	OSImageURL      string   `json:"osImageURL,omitempty"`
	KernelArguments []string `json:"kernelArguments,omitempty"`
	Extensions      []string `json:"extensions,omitempty"`
	KernelType      string   `json:"kernelType,omitempty"`
}

func osConfig(spec mcfgv1.MachineConfigSpec) OSConfig {
	kt := spec.KernelType
	if kt == "" {
		kt = "default"
	}
	return OSConfig{OSImageURL: spec.OSImageURL, KernelArguments: spec.KernelArguments, Extensions: spec.Extensions, KernelType: kt}
}

func (c OSConfig) equal(o OSConfig) bool {
	a, _ := json.Marshal(c)
	b, _ := json.Marshal(o)
	return string(a) == string(b)
}

// OSUpdater stages OS changes (image, kernel arguments, extensions, kernel
// type) for the next boot. Apply must be idempotent: after a crash the
// daemon applies the same change again.
type OSUpdater interface {
	Apply(ctx context.Context, from, to OSConfig) error
}

// RpmOstree applies OS changes with rpm-ostree, on the host root.
type RpmOstree struct {
	// Root is the host root; commands run chrooted into it unless it is /.
	Root string
}

// rpmOstreePath is rpm-ostree on the host (RHEL CoreOS, and make
// cluster's stand-in): absolute, since it is looked up inside the chroot.
const rpmOstreePath = "/usr/bin/rpm-ostree"

func (r RpmOstree) run(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "rpm-ostree", args...)
	if r.Root != "" && r.Root != "/" {
		// The kernel's chroot, not chroot(1): ndp's image holds no
		// binaries but its own.
		cmd = exec.CommandContext(ctx, rpmOstreePath, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: r.Root}
		cmd.Dir = "/"
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		where := ""
		if cmd.SysProcAttr != nil {
			where = " (chrooted into " + r.Root + ")"
		}
		return fmt.Errorf("rpm-ostree %s%s: %v: %s", strings.Join(args, " "), where, err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (r RpmOstree) Apply(ctx context.Context, from, to OSConfig) error {
	if to.OSImageURL != "" && to.OSImageURL != from.OSImageURL {
		if err := r.run(ctx, "rebase", "--experimental", "ostree-unverified-registry:"+to.OSImageURL); err != nil {
			return err
		}
	}
	if strings.Join(from.KernelArguments, "\x00") != strings.Join(to.KernelArguments, "\x00") {
		// Order matters: remove the old arguments, then append the new.
		args := []string{"kargs"}
		for _, a := range from.KernelArguments {
			args = append(args, "--delete-if-present="+a)
		}
		for _, a := range to.KernelArguments {
			args = append(args, "--append-if-missing="+a)
		}
		if err := r.run(ctx, args...); err != nil {
			return err
		}
	}
	added, removed := stringSetDiff(from.Extensions, to.Extensions)
	if len(added)+len(removed) > 0 {
		args := []string{"update"}
		for _, e := range added {
			args = append(args, "--install="+e)
		}
		for _, e := range removed {
			args = append(args, "--uninstall="+e)
		}
		if err := r.run(ctx, args...); err != nil {
			return err
		}
	}
	if from.KernelType != to.KernelType {
		switch to.KernelType {
		case "realtime":
			return r.run(ctx, "override", "remove", "kernel", "kernel-core", "kernel-modules", "kernel-modules-core", "kernel-modules-extra", "--install=kernel-rt-core", "--install=kernel-rt-modules", "--install=kernel-rt-modules-extra")
		case "64k-pages":
			return r.run(ctx, "override", "remove", "kernel", "kernel-core", "kernel-modules", "kernel-modules-core", "kernel-modules-extra", "--install=kernel-64k-core", "--install=kernel-64k-modules", "--install=kernel-64k-modules-extra")
		default:
			return r.run(ctx, "override", "reset", "kernel", "kernel-core", "kernel-modules", "kernel-modules-core", "kernel-modules-extra")
		}
	}
	return nil
}

// RecordingOSUpdater records each change as a line of a file instead of
// applying it, where no rpm-ostree can run (tests, a local cluster).
type RecordingOSUpdater struct{ Path string }

func (r RecordingOSUpdater) Apply(_ context.Context, from, to OSConfig) error {
	return durablefile.AppendJSONLine(r.Path, map[string]OSConfig{"from": from, "to": to})
}

func stringSetDiff(a, b []string) (added, removed []string) {
	in := func(s []string, x string) bool {
		for _, y := range s {
			if y == x {
				return true
			}
		}
		return false
	}
	for _, x := range b {
		if !in(a, x) {
			added = append(added, x)
		}
	}
	for _, x := range a {
		if !in(b, x) {
			removed = append(removed, x)
		}
	}
	return added, removed
}
