package osupdate

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Apt updates a Debian or Ubuntu host to what its apt sources and
// preferences (pins) say: the target is the files the rendered config
// writes under /etc/apt (a snapshot source, pinned versions), so an OS
// update is a config change like any other. It takes dpkg's lock as every
// apt front end does, waiting for unattended-upgrades rather than racing
// it, finishes a dpkg run left half done, upgrades, then asks the host
// what the update needs: /var/run/reboot-required (written by packages'
// postinst scripts) and needrestart's batch report.
type Apt struct {
	Runner Runner
	// Root is the host's root, where /var/run/reboot-required is read.
	Root string
	// LockTimeout is how long apt-get waits for dpkg's lock (held by
	// unattended-upgrades or an administrator's apt); 10 minutes if zero.
	LockTimeout time.Duration
}

// The host's commands: absolute, since they run chrooted into the host.
const (
	aptGetPath      = "/usr/bin/apt-get"
	dpkgPath        = "/usr/bin/dpkg"
	dpkgQueryPath   = "/usr/bin/dpkg-query"
	needrestartPath = "/usr/sbin/needrestart"
)

// aptEnv: no question asked (a prompt would hang the update), and
// needrestart's apt hook held back: the updater runs it once, in batch
// mode, after the upgrade.
var aptEnv = []string{"DEBIAN_FRONTEND=noninteractive", "NEEDRESTART_SUSPEND=1"}

func (a Apt) lockTimeout() string {
	t := a.LockTimeout
	if t <= 0 {
		t = 10 * time.Minute
	}
	return "DPkg::Lock::Timeout=" + strconv.Itoa(int(t.Seconds()))
}

// Steps are the command lines Apply runs, in order. The first runs only
// where dpkg reports packages left half installed or configured, the
// fourth only where the simulation changes something, the last only where
// needrestart is installed.
func (a Apt) Steps() []Command {
	return []Command{
		{Env: aptEnv, Args: []string{dpkgPath, "--configure", "-a", "--force-confdef", "--force-confold"}},
		{Env: aptEnv, Args: []string{aptGetPath, "-o", a.lockTimeout(), "update"}},
		a.upgrade(true),
		a.upgrade(false),
		cmd(needrestartPath, "-b", "-r", "l"),
	}
}

// upgrade is the upgrade, simulated or not. dist-upgrade: a new snapshot
// may add or remove dependencies. Configuration files the rendered config
// wrote are kept (--force-confold).
func (a Apt) upgrade(simulate bool) Command {
	args := []string{aptGetPath, "-o", a.lockTimeout(), "-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold",
		"--allow-downgrades", "-y"}
	if simulate {
		args = append(args, "--simulate")
	}
	return Command{Env: aptEnv, Args: append(args, "dist-upgrade")}
}

// Apply upgrades the host and returns what the update needs. It is
// idempotent: run again after a crash it finishes what dpkg left, and an
// upgrade with nothing to do changes nothing.
func (a Apt) Apply(ctx context.Context) (Outcome, error) {
	steps := a.Steps()
	out, err := a.Runner.Run(ctx, cmd(dpkgQueryPath, "-W", "-f", dpkgQueryFormat))
	if err != nil {
		return Outcome{}, err
	}
	pkgs, err := ParseDpkgStatus(out)
	if err != nil {
		return Outcome{}, fmt.Errorf("dpkg-query: %w", err)
	}
	if len(Interrupted(pkgs)) > 0 {
		if _, err := a.Runner.Run(ctx, steps[0]); err != nil {
			return Outcome{}, err
		}
	}
	if _, err := a.Runner.Run(ctx, steps[1]); err != nil {
		return Outcome{}, err
	}
	sim, err := a.Runner.Run(ctx, steps[2])
	if err != nil {
		return Outcome{}, err
	}
	changes, err := ParseAptSimulation(sim)
	if err != nil {
		return Outcome{}, fmt.Errorf("apt-get --simulate: %w", err)
	}
	if len(changes) > 0 {
		if _, err := a.Runner.Run(ctx, steps[3]); err != nil {
			return Outcome{}, err
		}
	}
	required, requestedBy, err := a.rebootRequired()
	if err != nil {
		return Outcome{}, err
	}
	// Without needrestart (not installed), only the packages' own requests
	// count: nothing is restarted.
	var nr Needrestart
	if _, err := os.Stat(filepath.Join(a.Root, needrestartPath)); err == nil {
		out, err := a.Runner.Run(ctx, steps[4])
		if err != nil {
			return Outcome{}, err
		}
		if nr, err = ParseNeedrestart(out); err != nil {
			return Outcome{}, fmt.Errorf("needrestart -b: %w", err)
		}
	}
	o := AptOutcome(required, requestedBy, nr)
	o.Changes = changes
	return o, nil
}

// rebootRequired reads /var/run/reboot-required and the packages that
// asked for it (/var/run/reboot-required.pkgs, one a line).
func (a Apt) rebootRequired() (bool, []string, error) {
	// The postinst scripts ran chrooted: Debian's /var/run is a link to
	// /run, which must resolve inside the host root, not the daemon's.
	dir, err := InRoot(a.Root, "/var/run")
	if err != nil {
		return false, nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "reboot-required")); errors.Is(err, fs.ErrNotExist) {
		return false, nil, nil
	} else if err != nil {
		return false, nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, "reboot-required.pkgs"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return true, nil, err
	}
	return true, ParseRebootRequiredPkgs(b), nil
}

// AptOutcome decides what an apt update needs from what the host says: a
// reboot where a package asked for one (reboot-required) or needrestart
// finds the running kernel or microcode older than the installed ones;
// otherwise the services needrestart names restarted.
func AptOutcome(rebootRequired bool, requestedBy []string, nr Needrestart) Outcome {
	o := Outcome{Restart: nr.Services}
	if rebootRequired {
		o.Reboot = true
		o.RequestedBy = requestedBy
		if len(o.RequestedBy) == 0 {
			o.RequestedBy = []string{"/var/run/reboot-required"}
		}
	}
	if nr.KernelStatus == KernelABIUpgrade || nr.KernelStatus == KernelVersionUpgrade {
		o.Reboot = true
		o.RequestedBy = append(o.RequestedBy, fmt.Sprintf("kernel %s running, %s installed", nr.KernelCurrent, nr.KernelExpected))
	}
	if nr.MicrocodeStatus == MicrocodeObsolete {
		o.Reboot = true
		o.RequestedBy = append(o.RequestedBy, "processor microcode updated")
	}
	return o
}

// ParseRebootRequiredPkgs reads /var/run/reboot-required.pkgs: a package
// a line, repeated where several postinst scripts asked; sorted, once each.
func ParseRebootRequiredPkgs(b []byte) []string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

// PackageChange is one package an update installs, upgrades, downgrades or
// removes.
type PackageChange struct {
	Name string `json:"name"`
	// From is the installed version ("" for a new package), To the new
	// one ("" for a removal).
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

func (c PackageChange) String() string {
	switch {
	case c.From == "":
		return c.Name + " " + c.To + " (new)"
	case c.To == "":
		return c.Name + " " + c.From + " (removed)"
	}
	return c.Name + " " + c.From + " -> " + c.To
}

// ParseAptSimulation reads what `apt-get --simulate` would do: its Inst
// lines ("Inst libssl3 [3.0.11-1] (3.0.13-1 Debian:12/stable [amd64])", a
// new package without the bracketed old version) and Remv/Purg lines
// ("Remv foo [1.0]"). Conf lines and apt's prose are skipped; an Inst,
// Remv or Purg line of another shape is an error naming its line.
func ParseAptSimulation(out []byte) ([]PackageChange, error) {
	var changes []PackageChange
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "Inst":
			c, ok := parseInst(f[1:])
			if !ok {
				return nil, fmt.Errorf("line %d: not an Inst line apt writes: %q", n, sc.Text())
			}
			changes = append(changes, c)
		case "Remv", "Purg":
			if len(f) < 2 {
				return nil, fmt.Errorf("line %d: %s without a package: %q", n, f[0], sc.Text())
			}
			c := PackageChange{Name: f[1]}
			if len(f) > 2 {
				c.From = strings.Trim(f[2], "[]")
			}
			changes = append(changes, c)
		}
	}
	return changes, sc.Err()
}

func parseInst(f []string) (PackageChange, bool) {
	if len(f) < 2 {
		return PackageChange{}, false
	}
	c := PackageChange{Name: f[0]}
	rest := f[1:]
	if strings.HasPrefix(rest[0], "[") && strings.HasSuffix(rest[0], "]") {
		c.From = strings.Trim(rest[0], "[]")
		rest = rest[1:]
	}
	if len(rest) == 0 || !strings.HasPrefix(rest[0], "(") || len(rest[0]) < 2 {
		return PackageChange{}, false
	}
	c.To = strings.TrimSuffix(strings.TrimPrefix(rest[0], "("), ")")
	return c, c.Name != "" && c.To != ""
}

// dpkgQueryFormat: each package's state, name (with its architecture
// where it is not the native one) and version, tab-separated.
const dpkgQueryFormat = "${db:Status-Abbrev}\t${binary:Package}\t${Version}\n"

// DpkgPackage is one package as dpkg's database has it.
type DpkgPackage struct {
	Name, Version string
	// Want, Status and Err are db:Status-Abbrev's three letters: the
	// selection (i install, h hold, r remove, p purge, u unknown), the
	// state (n not-installed, c config-files, H half-installed,
	// U unpacked, F half-configured, W triggers-awaited, t
	// triggers-pending, i installed) and R for reinst-required.
	Want, Status, Err byte
}

// ParseDpkgStatus reads dpkg-query's output in dpkgQueryFormat; a line of
// another shape is an error naming it.
func ParseDpkgStatus(out []byte) ([]DpkgPackage, error) {
	var pkgs []DpkgPackage
	for n, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if l == "" {
			continue
		}
		f := strings.Split(l, "\t")
		if len(f) != 3 || len(f[0]) != 3 || f[1] == "" || !strings.ContainsRune("uihrp", rune(f[0][0])) ||
			!strings.ContainsRune("ncHUFWti", rune(f[0][1])) || !strings.ContainsRune(" R", rune(f[0][2])) {
			return nil, fmt.Errorf("line %d: not a dpkg-query status line: %q", n+1, l)
		}
		pkgs = append(pkgs, DpkgPackage{Want: f[0][0], Status: f[0][1], Err: f[0][2], Name: f[1], Version: f[2]})
	}
	return pkgs, nil
}

// Interrupted lists the packages a dpkg run left half done (half
// installed, unpacked, half configured, awaiting or pending triggers, or
// to be reinstalled): `dpkg --configure -a` finishes them.
func Interrupted(pkgs []DpkgPackage) []string {
	var out []string
	for _, p := range pkgs {
		if strings.ContainsRune("HUFWt", rune(p.Status)) || p.Err == 'R' {
			out = append(out, p.Name)
		}
	}
	return out
}

// Kernel status in needrestart's batch output (NEEDRESTART-KSTA).
const (
	KernelUnknown        = 0
	KernelCurrent        = 1
	KernelABIUpgrade     = 2 // a newer kernel of the same ABI is installed
	KernelVersionUpgrade = 3 // a newer kernel version is installed
)

// Microcode status (NEEDRESTART-UCSTA).
const (
	MicrocodeUnknown  = 0
	MicrocodeCurrent  = 1
	MicrocodeObsolete = 2
)

// Needrestart is needrestart's batch report (needrestart -b).
type Needrestart struct {
	Version                       string
	KernelCurrent, KernelExpected string
	KernelStatus                  int
	MicrocodeStatus               int
	// Services are the systemd services running replaced code.
	Services []string
	// Containers and Sessions are reported, never restarted by ndp.
	Containers, Sessions []string
}

// ParseNeedrestart reads needrestart's batch output: "NEEDRESTART-KEY:
// value" lines. Lines without the prefix (warnings) are skipped; a
// NEEDRESTART line without a value, or a status that is not a number, is
// an error naming its line.
func ParseNeedrestart(out []byte) (Needrestart, error) {
	var r Needrestart
	for n, l := range strings.Split(string(out), "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(l), "NEEDRESTART-")
		if !ok {
			continue
		}
		key, val, ok := strings.Cut(rest, ":")
		val = strings.TrimSpace(val)
		if !ok || val == "" {
			return Needrestart{}, fmt.Errorf("line %d: no value: %q", n+1, l)
		}
		num := func() (int, error) {
			v, err := strconv.Atoi(val)
			if err != nil || v < 0 {
				return 0, fmt.Errorf("line %d: %s is not a status: %q", n+1, key, val)
			}
			return v, nil
		}
		var err error
		switch key {
		case "VER":
			r.Version = val
		case "KCUR":
			r.KernelCurrent = val
		case "KEXP":
			r.KernelExpected = val
		case "KSTA":
			r.KernelStatus, err = num()
		case "UCSTA":
			r.MicrocodeStatus, err = num()
		case "SVC":
			if !slices.Contains(r.Services, val) {
				r.Services = append(r.Services, val)
			}
		case "CONT":
			r.Containers = append(r.Containers, val)
		case "SESS":
			r.Sessions = append(r.Sessions, val)
		}
		if err != nil {
			return Needrestart{}, err
		}
	}
	slices.Sort(r.Services)
	return r, nil
}
