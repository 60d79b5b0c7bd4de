// Package osupdate holds ndp-daemon's OS updaters, one per kind of host:
// rpm-ostree (RHEL CoreOS, Fedora CoreOS), apt (Debian, Ubuntu), Flatcar's
// update_engine and bootc; how a host's kind is detected; and the parsers
// of what each tool reports. An updater carries out the OS part of a plan
// the controller computed: it runs the command lines Steps lists, in that
// order, and reports what the host says the update needs (Outcome). What
// the daemon does with that answer is written in the plan before it runs.
package osupdate

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"syscall"
)

// Config is the part of a rendered MachineConfig an OS updater applies.
type Config struct {
	OSImageURL      string   `json:"osImageURL,omitempty"`
	KernelArguments []string `json:"kernelArguments,omitempty"`
	Extensions      []string `json:"extensions,omitempty"`
	KernelType      string   `json:"kernelType,omitempty"`
}

// Equal says whether c and o ask for the same OS.
func (c Config) Equal(o Config) bool {
	a, _ := json.Marshal(c)
	b, _ := json.Marshal(o)
	return string(a) == string(b)
}

// Command is one command line an updater runs on the host.
type Command struct {
	// Env is added to the command's environment ("NAME=value").
	Env  []string `json:"env,omitempty"`
	Args []string `json:"args"`
}

func (c Command) String() string {
	return strings.Join(append(slices.Clone(c.Env), c.Args...), " ")
}

func cmd(args ...string) Command { return Command{Args: args} }

// Outcome is what an applied update needs to take effect, as the host's
// own tools say it.
type Outcome struct {
	// Reboot: the host asks for a reboot.
	Reboot bool `json:"reboot,omitempty"`
	// SoftReboot: a userspace reboot is enough (systemctl soft-reboot):
	// the kernel and its arguments are unchanged.
	SoftReboot bool `json:"softReboot,omitempty"`
	// Restart lists the services that run replaced code and are restarted
	// where there is no reboot.
	Restart []string `json:"restart,omitempty"`
	// RequestedBy names what asked for the reboot: packages
	// (/var/run/reboot-required.pkgs), or the kernel needrestart found.
	RequestedBy []string `json:"requestedBy,omitempty"`
	// Changes are the packages the update installed, upgraded or removed.
	Changes []PackageChange `json:"changes,omitempty"`
}

// maxSummaryChanges bounds the packages Summary names one by one.
const maxSummaryChanges = 10

// Summary is the outcome as administrators read it, for Events and the
// node's history: "upgraded a 1 -> 2, b 1 -> 2; a reboot asked for by b",
// "upgraded a 1 -> 2; no reboot; restart a.service (needrestart)".
func (o Outcome) Summary() string {
	changed := "no package changed"
	if n := len(o.Changes); n > 0 {
		var names []string
		for i, c := range o.Changes {
			if i == maxSummaryChanges {
				names = append(names, fmt.Sprintf("and %d more", n-i))
				break
			}
			names = append(names, c.String())
		}
		changed = fmt.Sprintf("%d package(s): %s", n, strings.Join(names, ", "))
	}
	switch {
	case o.Reboot && o.SoftReboot:
		return changed + "; a soft reboot asked for by " + strings.Join(o.RequestedBy, ", ")
	case o.Reboot:
		return changed + "; a reboot asked for by " + strings.Join(o.RequestedBy, ", ")
	case len(o.Restart) > 0:
		return changed + "; no reboot needed; restart " + strings.Join(o.Restart, ", ") + " (needrestart)"
	}
	return changed + "; no reboot and no restart needed"
}

// Runner runs a command on the host and returns its combined output.
type Runner interface {
	Run(ctx context.Context, c Command) ([]byte, error)
}

// HostRunner runs commands on the host: chrooted into Root unless it is
// "/" or empty. The kernel's chroot, not chroot(1): ndp's image holds no
// binaries but its own, so commands are absolute paths inside the host.
type HostRunner struct{ Root string }

// hostPath is the PATH host commands run with: the daemon's own (its
// image has only its binaries) would leave dpkg, needrestart and the
// packages' scripts without theirs.
const hostPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

func (h HostRunner) Run(ctx context.Context, c Command) ([]byte, error) {
	x := exec.CommandContext(ctx, c.Args[0], c.Args[1:]...)
	x.Env = append(append(x.Environ(), hostPath), c.Env...)
	where := ""
	if h.Root != "" && h.Root != "/" {
		x.SysProcAttr = &syscall.SysProcAttr{Chroot: h.Root}
		x.Dir = "/"
		where = " (chrooted into " + h.Root + ")"
	}
	out, err := x.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%s%s: %v: %s", c, where, err, strings.TrimSpace(string(out)))
	}
	return out, nil
}

// runAll runs cmds in order and stops at the first that fails.
func runAll(ctx context.Context, r Runner, cmds []Command) error {
	for _, c := range cmds {
		if _, err := r.Run(ctx, c); err != nil {
			return err
		}
	}
	return nil
}
