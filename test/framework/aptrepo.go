package framework

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The apt scenario: a package repository on each worker VM, built here
// with dpkg-deb in three snapshots, and a MachineConfig whose apt source
// moves the nodes from one snapshot to the next, which the default policy
// plans as a package update: ndp-daemon runs the VMs' real apt-get and
// needrestart, and does what the host answers.
const (
	// AptMachineConfig is the MachineConfig of AptSourcesMC.
	AptMachineConfig = "70-worker-apt"
	// DemoPackage is a service: an upgrade replaces its binary without
	// restarting it, so needrestart names DemoService.
	DemoPackage = "ndp-demo"
	DemoService = "ndp-demo.service"
	// DemoKernelPackage stands for a kernel: its 2.0 asks for a reboot,
	// as Debian's kernels do.
	DemoKernelPackage = "ndp-demo-kernel"
	// aptRepoDir is the repository on the VMs (a snapshot a subdirectory),
	// aptRepoShare where it comes from, in each VM's share.
	aptRepoDir   = "/var/lib/ndp-demo-repo"
	aptRepoShare = "ndp-demo-repo"
	aptSources   = "/etc/apt/sources.list.d/ndp-demo.list"
	demoBinary   = "/usr/libexec/ndp-demo/ndp-demo"
)

// demoDeb is one package of the repository.
type demoDeb struct {
	name, version, arch, description string
	files                            map[string]demoFile // by absolute path
	postinst                         string
}

type demoFile struct {
	data []byte
	mode os.FileMode
}

// The maintainer scripts, as debhelper's. ndp-demo's starts the service
// on a first install only (where systemd runs): an upgrade leaves it
// running the replaced binary (dh_installsystemd
// --no-restart-after-upgrade), for needrestart to find. ndp-demo-kernel 2.0's asks for a reboot as Debian's
// /usr/share/update-notifier/notify-reboot-required does (not on a
// minbase image): the flag file and the package's name.
const (
	demoPostinst = `#!/bin/sh
set -e
if [ "$1" = configure ] && [ -z "$2" ]; then
	deb-systemd-helper enable ` + DemoService + `
	if [ -d /run/systemd/system ]; then
		systemctl --system daemon-reload
		deb-systemd-invoke start ` + DemoService + `
	fi
fi
`
	demoKernelPostinst = `#!/bin/sh
set -e
if [ "$1" = configure ]; then
	echo '*** System restart required ***' >/var/run/reboot-required
	echo "$DPKG_MAINTSCRIPT_PACKAGE" >>/var/run/reboot-required.pkgs
fi
`
	demoUnit = `[Unit]
Description=ndp's apt scenario: a service whose binary a package update replaces

[Service]
ExecStart=` + demoBinary + `

[Install]
WantedBy=multi-user.target
`
)

// demoDebs are the packages, by file name; bin is the service's binary
// (make cluster's pause program: static, it runs anywhere and waits).
func demoDebs(bin []byte) []demoDeb {
	service := func(version string) demoDeb {
		return demoDeb{name: DemoPackage, version: version, arch: "amd64",
			description: "ndp's apt scenario: a service\n its binary replaced by an upgrade, the service left running for needrestart to name",
			files: map[string]demoFile{
				demoBinary:                                  {bin, 0o755},
				"/lib/systemd/system/" + DemoService:        {[]byte(demoUnit), 0o644},
				"/usr/share/doc/" + DemoPackage + "/README": {[]byte("ndp-demo " + version + "\n"), 0o644},
			}, postinst: demoPostinst}
	}
	kernel := func(version, postinst string) demoDeb {
		return demoDeb{name: DemoKernelPackage, version: version, arch: "all",
			description: "ndp's apt scenario: a kernel\n whose 2.0 asks for a reboot, as Debian's kernels do",
			files: map[string]demoFile{
				"/usr/share/doc/" + DemoKernelPackage + "/README": {[]byte("ndp-demo-kernel " + version + "\n"), 0o644},
			}, postinst: postinst}
	}
	return []demoDeb{service("1.0"), service("2.0"), kernel("1.0", ""), kernel("2.0", demoKernelPostinst)}
}

// aptSnapshots: the versions each snapshot holds, snapshot-1 first.
var aptSnapshots = []map[string]string{
	{DemoPackage: "1.0", DemoKernelPackage: "1.0"},
	{DemoPackage: "2.0", DemoKernelPackage: "1.0"},
	{DemoPackage: "2.0", DemoKernelPackage: "2.0"},
}

func (d demoDeb) fileName() string { return fmt.Sprintf("%s_%s_%s.deb", d.name, d.version, d.arch) }

// control is the package's DEBIAN/control, and its Packages stanza's
// first fields.
func (d demoDeb) control() string {
	size := 0
	for _, f := range d.files {
		size += (len(f.data) + 1023) / 1024
	}
	return fmt.Sprintf("Package: %s\nVersion: %s\nArchitecture: %s\nMaintainer: ndp make cluster <ndp@example.invalid>\nInstalled-Size: %d\nSection: misc\nPriority: optional\nDescription: %s\n",
		d.name, d.version, d.arch, size, d.description)
}

// build writes the package into dir with dpkg-deb (files owned by root).
func (d demoDeb) build(dir string) error {
	tree, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tree)
	files := map[string]demoFile{"/DEBIAN/control": {[]byte(d.control()), 0o644}}
	if d.postinst != "" {
		files["/DEBIAN/postinst"] = demoFile{[]byte(d.postinst), 0o755}
	}
	for p, f := range d.files {
		files[p] = f
	}
	for p, f := range files {
		dst := filepath.Join(tree, p)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, f.data, f.mode); err != nil {
			return err
		}
		if err := os.Chmod(dst, f.mode); err != nil { // whatever the umask
			return err
		}
	}
	out, err := exec.Command("dpkg-deb", "--root-owner-group", "--build", tree, filepath.Join(dir, d.fileName())).CombinedOutput()
	if err != nil {
		return fmt.Errorf("dpkg-deb --build %s: %v: %s", d.fileName(), err, out)
	}
	return nil
}

// BuildAptRepo writes the repository into dir: dir/snapshot-N, each a flat
// repository (deb [trusted=yes] file:DIR/snapshot-N ./) of its packages
// and their Packages index (what apt reads of it: no dpkg-dev needed).
func BuildAptRepo(dir string, bin []byte) error {
	pool := filepath.Join(dir, "pool")
	if err := os.MkdirAll(pool, 0o755); err != nil {
		return err
	}
	debs := map[string]demoDeb{}
	for _, d := range demoDebs(bin) {
		if err := d.build(pool); err != nil {
			return err
		}
		debs[d.name+" "+d.version] = d
	}
	for i, versions := range aptSnapshots {
		snap := filepath.Join(dir, fmt.Sprintf("snapshot-%d", i+1))
		if err := os.MkdirAll(snap, 0o755); err != nil {
			return err
		}
		var index strings.Builder
		for _, name := range []string{DemoPackage, DemoKernelPackage} {
			d := debs[name+" "+versions[name]]
			b, err := os.ReadFile(filepath.Join(pool, d.fileName()))
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(snap, d.fileName()), b, 0o644); err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			fmt.Fprintf(&index, "%sFilename: ./%s\nSize: %d\nSHA256: %s\n\n", d.control(), d.fileName(), len(b), hex.EncodeToString(sum[:]))
		}
		if err := os.WriteFile(filepath.Join(snap, "Packages"), []byte(index.String()), 0o644); err != nil {
			return err
		}
	}
	return os.RemoveAll(pool)
}

// AptSourcesMC is the worker pool's apt source, snapshot n of the
// repository: the only one (the VM image has no other).
func AptSourcesMC(n int) string {
	list := fmt.Sprintf("deb [trusted=yes] file:%s/snapshot-%d ./\n", aptRepoDir, n)
	return `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: ` + AptMachineConfig + `
  labels: {machineconfiguration.openshift.io/role: worker}
spec:
  config:
    ignition: {version: 3.4.0}
    storage:
      files:
      - path: ` + aptSources + `
        mode: 420
        overwrite: true
        contents:
          source: data:text/plain;charset=utf-8;base64,` + base64.StdEncoding.EncodeToString([]byte(list)) + "\n"
}

// ProvisionAptRepo is the worker VMs' provisioning for the apt scenario:
// the repository, built here, copied to each VM through its share, and
// snapshot-1's packages installed (ndp-demo.service enabled and started),
// as a node's installer would before ndp manages its sources.
func (c *Cluster) ProvisionAptRepo(ctx context.Context) error {
	bin, err := os.ReadFile(c.Bin("pause"))
	if err != nil {
		return err
	}
	repo := c.Path(aptRepoShare)
	if err := BuildAptRepo(repo, bin); err != nil {
		return err
	}
	for _, w := range c.Workers {
		// The share is live: what is added to it shows in the guest.
		if out, err := exec.Command("cp", "-a", repo, c.s.path("vms", w.Name, "share", aptRepoShare)).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: copying the repository into the share: %v: %s", w.Name, err, out)
		}
		script := fmt.Sprintf("set -e; mkdir -p %[1]s; cp -a %[2]s/%[3]s/. %[1]s/; dpkg -i %[1]s/snapshot-1/*.deb; systemctl is-active %[4]s",
			aptRepoDir, guestShareDir, aptRepoShare, DemoService)
		out, err := w.VM.Run(ctx, "sh", "-c", script)
		fmt.Printf("%s: %s", w.Name, out)
		if err != nil {
			return fmt.Errorf("%s: installing snapshot-1: %w", w.Name, err)
		}
	}
	return nil
}

// PackageVersion is the version of pkg installed on the worker.
func (c *Cluster) PackageVersion(ctx context.Context, w *Worker, pkg string) (string, error) {
	out, err := w.VM.Run(ctx, "dpkg-query", "-W", "-f", "${Version}", pkg)
	return strings.TrimSpace(out), err
}

// WhyPackages waits for `kubectl ndp why NODE --update 1` to show the
// node's update to target done, checks that it says each of want, and
// returns what it says of the packages (the package update's step).
func (c *Cluster) WhyPackages(ctx context.Context, node, target string, want ...string) (string, error) {
	var out string
	if err := followProgress(ctx, node+"'s history to record its update to "+target+" done", minCeiling, func() observation {
		o := c.clusterProgress()
		var err error
		out, err = c.KubectlQuiet("ndp", "why", node, "--update", "1")
		if err == nil {
			o.progress["why"] = GrepLine(out, "Result:")
			o.done = strings.Contains(out, " -> "+target+"\n") && strings.Contains(out, "Result:   Done")
		}
		return o
	}); err != nil {
		return "", err
	}
	fmt.Print(out)
	for _, s := range want {
		if !strings.Contains(out, s) {
			return "", fmt.Errorf("kubectl ndp why %s does not say %q", node, s)
		}
	}
	return GrepLine(out, "package(s):"), nil
}
