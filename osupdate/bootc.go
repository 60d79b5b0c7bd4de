package osupdate

import (
	"context"
	"encoding/json"
	"fmt"
)

// Bootc updates an image-mode host with bootc: `bootc switch` to another
// image reference (the rendered config's osImageURL), `bootc upgrade` to
// the newest image of the same reference. Both stage a deployment for the
// next boot; where bootc reports the staged deployment soft-reboot capable
// (the same kernel, initramfs and arguments), a userspace soft reboot is
// enough to finalize it, and the plan says so.
type Bootc struct{ Runner Runner }

const bootcPath = "/usr/bin/bootc"

// Steps are the command lines that take the host to the image to: switch
// where the reference differs from the booted one, upgrade otherwise.
func (b Bootc) Steps(booted, to string) []Command {
	if to != "" && to != booted {
		return []Command{cmd(bootcPath, "switch", "--retain", to), cmd(bootcPath, "status", "--json")}
	}
	return []Command{cmd(bootcPath, "upgrade"), cmd(bootcPath, "status", "--json")}
}

// Apply stages the image to and returns what finalizing it needs.
// Idempotent: switching to the staged reference again is a no-op.
func (b Bootc) Apply(ctx context.Context, to string) (Outcome, error) {
	st, err := b.status(ctx)
	if err != nil {
		return Outcome{}, err
	}
	steps := b.Steps(st.Status.Booted.Image.Image.Image, to)
	if _, err := b.Runner.Run(ctx, steps[0]); err != nil {
		return Outcome{}, err
	}
	if st, err = b.status(ctx); err != nil {
		return Outcome{}, err
	}
	return BootcOutcome(st), nil
}

func (b Bootc) status(ctx context.Context) (BootcHost, error) {
	out, err := b.Runner.Run(ctx, cmd(bootcPath, "status", "--json"))
	if err != nil {
		return BootcHost{}, err
	}
	return ParseBootcStatus(out)
}

// BootcOutcome: nothing staged, nothing to do; a staged deployment that
// is soft-reboot capable needs a soft reboot, any other a reboot.
func BootcOutcome(h BootcHost) Outcome {
	s := h.Status.Staged
	if s == nil {
		return Outcome{}
	}
	by := []string{"bootc: " + s.Image.Image.Image + " " + s.Image.ImageDigest + " staged"}
	if s.SoftRebootCapable {
		return Outcome{SoftReboot: true, RequestedBy: by}
	}
	return Outcome{Reboot: true, RequestedBy: by}
}

// BootcHost is `bootc status --json`, the parts ndp reads (the format is
// bootc's BootcHost, org.containers.bootc/v1).
type BootcHost struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Status     struct {
		Staged   *BootcEntry `json:"staged"`
		Booted   *BootcEntry `json:"booted"`
		Rollback *BootcEntry `json:"rollback"`
	} `json:"status"`
}

// BootcEntry is one deployment.
type BootcEntry struct {
	Image struct {
		Image struct {
			Image     string `json:"image"`
			Transport string `json:"transport"`
		} `json:"image"`
		Version     string `json:"version"`
		ImageDigest string `json:"imageDigest"`
	} `json:"image"`
	SoftRebootCapable bool `json:"softRebootCapable"`
	DownloadOnly      bool `json:"downloadOnly"`
}

// ParseBootcStatus reads `bootc status --json`: a BootcHost with a booted
// deployment, or an error saying what it is instead.
func ParseBootcStatus(b []byte) (BootcHost, error) {
	var h BootcHost
	if err := json.Unmarshal(b, &h); err != nil {
		return BootcHost{}, fmt.Errorf("bootc status --json: %w", err)
	}
	if h.Kind != "BootcHost" {
		return BootcHost{}, fmt.Errorf("bootc status --json: kind %q, not BootcHost", h.Kind)
	}
	if h.Status.Booted == nil {
		return BootcHost{}, fmt.Errorf("bootc status --json: no booted deployment (not an image-mode host bootc booted)")
	}
	return h, nil
}
