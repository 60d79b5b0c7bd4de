package osupdate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// RpmOstree applies OS changes with rpm-ostree (RHEL CoreOS, Fedora
// CoreOS): each change is staged as a new deployment, and the reboot the
// plan holds finalizes it; nothing changes the running system.
type RpmOstree struct{ Runner Runner }

// rpmOstreePath is rpm-ostree on the host (and make cluster's stand-in).
const rpmOstreePath = "/usr/bin/rpm-ostree"

// kernelPackages are the default kernel's packages a kernel type
// replaces (as the MCO does for realtime and 64k-pages).
var kernelPackages = []string{"kernel", "kernel-core", "kernel-modules", "kernel-modules-core", "kernel-modules-extra"}

// Steps are the rpm-ostree command lines that take the host from from to
// to, in order: rebase onto the new image, the kernel arguments (the old
// removed, the new appended, so that their order is to's), extensions,
// then the kernel type.
func (r RpmOstree) Steps(from, to Config) []Command {
	var out []Command
	if to.OSImageURL != "" && to.OSImageURL != from.OSImageURL {
		out = append(out, cmd(rpmOstreePath, "rebase", "--experimental", "ostree-unverified-registry:"+to.OSImageURL))
	}
	if !slices.Equal(from.KernelArguments, to.KernelArguments) {
		args := []string{rpmOstreePath, "kargs"}
		for _, a := range from.KernelArguments {
			args = append(args, "--delete-if-present="+a)
		}
		for _, a := range to.KernelArguments {
			args = append(args, "--append-if-missing="+a)
		}
		out = append(out, cmd(args...))
	}
	added, removed := setDiff(from.Extensions, to.Extensions)
	if len(added)+len(removed) > 0 {
		args := []string{rpmOstreePath, "update"}
		for _, e := range added {
			args = append(args, "--install="+e)
		}
		for _, e := range removed {
			args = append(args, "--uninstall="+e)
		}
		out = append(out, cmd(args...))
	}
	if kernelType(from) != kernelType(to) {
		switch kt := kernelType(to); kt {
		case "realtime", "64k-pages":
			flavour := map[string]string{"realtime": "rt", "64k-pages": "64k"}[kt]
			args := append([]string{rpmOstreePath, "override", "remove"}, kernelPackages...)
			for _, p := range []string{"core", "modules", "modules-extra"} {
				args = append(args, "--install=kernel-"+flavour+"-"+p)
			}
			out = append(out, cmd(args...))
		default:
			out = append(out, cmd(append([]string{rpmOstreePath, "override", "reset"}, kernelPackages...)...))
		}
	}
	return out
}

func kernelType(c Config) string {
	if c.KernelType == "" {
		return "default"
	}
	return c.KernelType
}

// Apply stages from -> to. Every step is idempotent (rebase onto the
// image already staged, kargs -if-present/-if-missing, overrides), so a
// crash mid-way is resumed by applying again. The outcome is a reboot
// whenever something was staged: only the reboot finalizes it.
func (r RpmOstree) Apply(ctx context.Context, from, to Config) (Outcome, error) {
	steps := r.Steps(from, to)
	if err := runAll(ctx, r.Runner, steps); err != nil {
		return Outcome{}, err
	}
	return Outcome{Reboot: len(steps) > 0}, nil
}

// RpmOstreeStatus is what `rpm-ostree status --json` says of the host's
// deployments, the parts ndp reads.
type RpmOstreeStatus struct {
	Deployments []RpmOstreeDeployment `json:"deployments"`
	// Transaction is set while rpm-ostree runs one (another client's).
	Transaction json.RawMessage `json:"transaction"`
}

// RpmOstreeDeployment is one deployment.
type RpmOstreeDeployment struct {
	ID       string `json:"id"`
	Checksum string `json:"checksum"`
	Version  string `json:"version"`
	Booted   bool   `json:"booted"`
	Staged   bool   `json:"staged"`
	// ContainerImageReference is the image it was deployed from
	// ("ostree-unverified-registry:quay.io/...").
	ContainerImageReference string   `json:"container-image-reference"`
	RequestedPackages       []string `json:"requested-packages"`
}

// ParseRpmOstreeStatus reads `rpm-ostree status --json`. A status without
// a booted deployment is an error: it is not a host rpm-ostree booted.
func ParseRpmOstreeStatus(b []byte) (RpmOstreeStatus, error) {
	var s RpmOstreeStatus
	if err := json.Unmarshal(b, &s); err != nil {
		return RpmOstreeStatus{}, fmt.Errorf("rpm-ostree status --json: %w", err)
	}
	if s.Booted() == nil {
		return RpmOstreeStatus{}, fmt.Errorf("rpm-ostree status --json: no booted deployment among %d", len(s.Deployments))
	}
	return s, nil
}

// Booted is the booted deployment, nil if none is.
func (s RpmOstreeStatus) Booted() *RpmOstreeDeployment {
	return s.find(func(d RpmOstreeDeployment) bool { return d.Booted })
}

// Staged is the deployment the next boot finalizes, nil if none.
func (s RpmOstreeStatus) Staged() *RpmOstreeDeployment {
	return s.find(func(d RpmOstreeDeployment) bool { return d.Staged })
}

func (s RpmOstreeStatus) find(f func(RpmOstreeDeployment) bool) *RpmOstreeDeployment {
	for i := range s.Deployments {
		if f(s.Deployments[i]) {
			return &s.Deployments[i]
		}
	}
	return nil
}

// Image is the image reference without its ostree transport prefix.
func (d RpmOstreeDeployment) Image() string {
	ref := d.ContainerImageReference
	if i := strings.LastIndex(ref, ":"); strings.HasPrefix(ref, "ostree-") && i > 0 {
		// "ostree-unverified-registry:quay.io/x@sha256:…": the transport
		// ends at the first colon.
		_, ref, _ = strings.Cut(ref, ":")
	}
	return ref
}

// setDiff returns what b adds to a, in b's order, and what it removes, in
// a's.
func setDiff(a, b []string) (added, removed []string) {
	for _, x := range b {
		if !slices.Contains(a, x) && !slices.Contains(added, x) {
			added = append(added, x)
		}
	}
	for _, x := range a {
		if !slices.Contains(b, x) && !slices.Contains(removed, x) {
			removed = append(removed, x)
		}
	}
	return added, removed
}
