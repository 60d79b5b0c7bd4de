// Command rpm-ostree-standin stands in for rpm-ostree on make cluster's
// Debian worker VMs, installed there as /usr/bin/rpm-ostree: ndp-daemon's
// OS updater (osupdate.RpmOstree) runs it as it runs rpm-ostree on RHEL
// CoreOS, chrooted into the host root.
//
// It accepts exactly the command lines the daemon issues (rebase, kargs,
// update --install/--uninstall, override remove/reset of the kernel) and
// status, and refuses any other with exit status 2 and a message: a daemon
// that issues a wrong command line fails the scenario instead of passing
// unseen. Each invocation, accepted or not, is appended to a log (its argv,
// time and boot ID). An accepted change is staged, as rpm-ostree stages a
// deployment; `rpm-ostree standin-boot`, run by a unit early at every boot,
// makes the staged deployment the booted one. So the booted marker changes
// only across a real reboot, as the OS does on a CoreOS node.
//
// Files, under /var/lib/rpm-ostree-standin:
//
//	calls        one JSON object a line: {"at", "boot", "argv", "error"}
//	staged.json  the deployment the next boot makes current (absent: none)
//	booted.json  the booted deployment and the boot it was made current in
//	             (absent: the image's own, never changed)
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ndp-dev/ndp/internal/durablefile"
)

// DefaultDir is where the stand-in keeps its state on the node.
const DefaultDir = "/var/lib/rpm-ostree-standin"

// bootIDFile is the kernel's boot ID.
const bootIDFile = "/proc/sys/kernel/random/boot_id"

// Deployment is what rpm-ostree would boot: the image, kernel arguments,
// layered packages (the MachineConfig's extensions) and the kernel.
type Deployment struct {
	// Image is the container image ref rebased to ("": the VM image's own).
	Image    string   `json:"image"`
	Kargs    []string `json:"kargs"`
	Packages []string `json:"packages"`
	// Kernel is default, realtime or 64k-pages.
	Kernel string `json:"kernel"`
	// StagedAt and StagedInBoot: when, and in which boot, it was staged.
	StagedAt     string `json:"stagedAt,omitempty"`
	StagedInBoot string `json:"stagedInBoot,omitempty"`
	// BootedIn is the boot that made it current (booted.json only).
	BootedIn string `json:"bootedIn,omitempty"`
}

// Call is one line of the call log.
type Call struct {
	At    string   `json:"at"`
	Boot  string   `json:"boot"`
	Argv  []string `json:"argv"`
	Error string   `json:"error,omitempty"`
}

// store is the stand-in's state directory and how it reads the boot ID.
type store struct {
	dir    string
	bootID func() string
	now    func() time.Time
}

func (s store) path(name string) string { return filepath.Join(s.dir, name) }

// errUsage is a command line the stand-in does not accept.
var errUsage = errors.New("usage")

func usage(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, a...))
}

// The kernel packages the daemon removes or resets for a kernel type, and
// what it installs for each non-default one, as osupdate.RpmOstree issues them.
var (
	kernelPackages = []string{"kernel", "kernel-core", "kernel-modules", "kernel-modules-core", "kernel-modules-extra"}
	kernelInstalls = map[string][]string{
		"realtime":  {"kernel-rt-core", "kernel-rt-modules", "kernel-rt-modules-extra"},
		"64k-pages": {"kernel-64k-core", "kernel-64k-modules", "kernel-64k-modules-extra"},
	}
)

const rebasePrefix = "ostree-unverified-registry:"

func main() {
	s := store{dir: DefaultDir, bootID: readBootID, now: time.Now}
	if d := os.Getenv("RPM_OSTREE_STANDIN_DIR"); d != "" {
		s.dir = d
	}
	os.Exit(run(s, os.Args[1:], os.Stdout, os.Stderr))
}

func readBootID() string {
	b, err := os.ReadFile(bootIDFile)
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// run runs one command line and returns the exit status: 0 done, 1 failed,
// 2 a command line the stand-in does not accept.
func run(s store, args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && args[0] == "standin-boot" {
		d, changed, err := s.boot()
		if err != nil {
			fmt.Fprintf(stderr, "rpm-ostree (stand-in): %v\n", err)
			return 1
		}
		if changed {
			fmt.Fprintf(stdout, "rpm-ostree (stand-in): booted the staged deployment: image %q, kargs %q, packages %q, kernel %s\n", d.Image, d.Kargs, d.Packages, d.Kernel)
		} else {
			fmt.Fprintln(stdout, "rpm-ostree (stand-in): nothing staged; the booted deployment stays")
		}
		return 0
	}
	out, err := s.command(args)
	call := Call{At: s.now().UTC().Format(time.RFC3339Nano), Boot: s.bootID(), Argv: append([]string{}, args...)}
	if err != nil {
		call.Error = err.Error()
	}
	if lerr := s.appendCall(call); lerr != nil {
		fmt.Fprintf(stderr, "rpm-ostree (stand-in): recording the call: %v\n", lerr)
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "rpm-ostree (stand-in): %v\n", err)
		if errors.Is(err, errUsage) {
			return 2
		}
		return 1
	}
	fmt.Fprint(stdout, out)
	return 0
}

// command runs an rpm-ostree command line: status prints, the others stage.
func (s store) command(args []string) (string, error) {
	if len(args) == 0 {
		return "", usage("no command (the stand-in accepts: rebase, kargs, update, override remove|reset, status)")
	}
	if args[0] == "status" {
		if len(args) > 2 || (len(args) == 2 && args[1] != "--json") {
			return "", usage("status takes only --json, got %q", args[1:])
		}
		return s.status(len(args) == 2)
	}
	d, err := s.next()
	if err != nil {
		return "", err
	}
	if err := apply(&d, args); err != nil {
		return "", err
	}
	d.StagedAt, d.StagedInBoot, d.BootedIn = s.now().UTC().Format(time.RFC3339Nano), s.bootID(), ""
	return "Staging deployment... done\nRun \"systemctl reboot\" to start a reboot\n", writeJSON(s.path("staged.json"), d)
}

// apply changes d as the command line args asks, or refuses it.
func apply(d *Deployment, args []string) error {
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "rebase":
		if len(rest) != 2 || rest[0] != "--experimental" || !strings.HasPrefix(rest[1], rebasePrefix) || rest[1] == rebasePrefix {
			return usage("rebase: want exactly `rebase --experimental %sIMAGE`, got %q", rebasePrefix, rest)
		}
		d.Image = strings.TrimPrefix(rest[1], rebasePrefix)
	case "kargs":
		if len(rest) == 0 {
			return usage("kargs: want --delete-if-present=ARG and/or --append-if-missing=ARG (the stand-in does not print kernel arguments)")
		}
		for _, a := range rest {
			switch {
			case strings.HasPrefix(a, "--delete-if-present=") && len(a) > len("--delete-if-present="):
				v := strings.TrimPrefix(a, "--delete-if-present=")
				d.Kargs = slices.DeleteFunc(d.Kargs, func(k string) bool { return k == v })
			case strings.HasPrefix(a, "--append-if-missing=") && len(a) > len("--append-if-missing="):
				if v := strings.TrimPrefix(a, "--append-if-missing="); !slices.Contains(d.Kargs, v) {
					d.Kargs = append(d.Kargs, v)
				}
			default:
				return usage("kargs: %q is neither --delete-if-present=ARG nor --append-if-missing=ARG", a)
			}
		}
	case "update":
		if len(rest) == 0 {
			return usage("update: want --install=PKG and/or --uninstall=PKG (an upgrade without them is not what ndp-daemon asks)")
		}
		for _, a := range rest {
			switch {
			case strings.HasPrefix(a, "--install=") && len(a) > len("--install="):
				if v := strings.TrimPrefix(a, "--install="); !slices.Contains(d.Packages, v) {
					d.Packages = append(d.Packages, v)
				}
			case strings.HasPrefix(a, "--uninstall=") && len(a) > len("--uninstall="):
				// Idempotent, as --install: the daemon repeats its
				// OS step after a crash.
				v := strings.TrimPrefix(a, "--uninstall=")
				d.Packages = slices.DeleteFunc(d.Packages, func(p string) bool { return p == v })
			default:
				return usage("update: %q is neither --install=PKG nor --uninstall=PKG", a)
			}
		}
	case "override":
		kernel, err := override(rest)
		if err != nil {
			return err
		}
		d.Kernel = kernel
	default:
		return usage("unknown command %q (the stand-in accepts: rebase, kargs, update, override remove|reset, status)", cmd)
	}
	return nil
}

// override reads `override remove KERNEL-PACKAGES --install=...` or
// `override reset KERNEL-PACKAGES` and returns the kernel type it selects.
func override(args []string) (string, error) {
	if len(args) == 0 {
		return "", usage("override: want remove or reset")
	}
	var pkgs, installs []string
	for _, a := range args[1:] {
		if v, ok := strings.CutPrefix(a, "--install="); ok {
			installs = append(installs, v)
		} else {
			pkgs = append(pkgs, a)
		}
	}
	if !slices.Equal(pkgs, kernelPackages) {
		return "", usage("override %s: want the kernel packages %q, got %q", args[0], kernelPackages, pkgs)
	}
	switch args[0] {
	case "reset":
		if len(installs) > 0 {
			return "", usage("override reset takes no --install, got %q", installs)
		}
		return "default", nil
	case "remove":
		for kernel, want := range kernelInstalls {
			if slices.Equal(installs, want) {
				return kernel, nil
			}
		}
		return "", usage("override remove: want --install= of one kernel's packages (%q or %q), got %q", kernelInstalls["realtime"], kernelInstalls["64k-pages"], installs)
	default:
		return "", usage("override: want remove or reset, got %q", args[0])
	}
}

// booted returns the booted deployment: booted.json, else the image's own.
func (s store) booted() (Deployment, error) {
	d := Deployment{Kernel: "default"}
	ok, err := readJSON(s.path("booted.json"), &d)
	if err != nil || ok {
		return d, err
	}
	return d, nil
}

// next is what a new change starts from: the staged deployment, else the
// booted one (changes before a reboot accumulate, as rpm-ostree's do).
func (s store) next() (Deployment, error) {
	var d Deployment
	ok, err := readJSON(s.path("staged.json"), &d)
	if err != nil || ok {
		return d, err
	}
	return s.booted()
}

// boot makes the staged deployment, if any, the booted one: what the
// unit run early at every boot does.
func (s store) boot() (Deployment, bool, error) {
	var d Deployment
	ok, err := readJSON(s.path("staged.json"), &d)
	if err != nil {
		return d, false, err
	}
	if !ok {
		b, err := s.booted()
		return b, false, err
	}
	d.BootedIn = s.bootID()
	if err := writeJSON(s.path("booted.json"), d); err != nil {
		return d, false, err
	}
	if err := os.Remove(s.path("staged.json")); err != nil {
		return d, false, err
	}
	return d, true, syncDir(s.dir)
}

func (s store) status(asJSON bool) (string, error) {
	booted, err := s.booted()
	if err != nil {
		return "", err
	}
	var staged *Deployment
	var d Deployment
	if ok, err := readJSON(s.path("staged.json"), &d); err != nil {
		return "", err
	} else if ok {
		staged = &d
	}
	if asJSON {
		b, err := json.MarshalIndent(map[string]any{"booted": booted, "staged": staged}, "", "  ")
		return string(b) + "\n", err
	}
	var b strings.Builder
	write := func(what string, d Deployment) {
		fmt.Fprintf(&b, "%s image: %q\n  kargs: %q\n  packages: %q\n  kernel: %s\n", what, d.Image, d.Kargs, d.Packages, d.Kernel)
	}
	write("* booted", booted)
	if staged != nil {
		write("  staged", *staged)
	}
	return b.String(), nil
}

func (s store) appendCall(c Call) error {
	return durablefile.AppendJSONLine(s.path("calls"), c)
}

// readJSON reads path into v; false when there is no such file.
func readJSON(path string, v any) (bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	return true, nil
}

// writeJSON replaces path atomically and durably: a reboot right after a
// staging (the daemon's next step) must find it whole.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := durablefile.Write(tmp, os.O_TRUNC, append(b, '\n')); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
