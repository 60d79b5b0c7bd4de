package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/ndp-dev/ndp/internal/durablefile"
	"github.com/ndp-dev/ndp/osupdate"
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

func osConfig(spec mcfgv1.MachineConfigSpec) osupdate.Config {
	kt := spec.KernelType
	if kt == "" {
		kt = "default"
	}
	return osupdate.Config{OSImageURL: spec.OSImageURL, KernelArguments: spec.KernelArguments, Extensions: spec.Extensions, KernelType: kt}
}

// OSUpdater stages OS changes (image, kernel arguments, extensions, kernel
// type) for the next boot (osupdate.ConfigUpdater on the host: rpm-ostree
// or bootc). Check says, before anything is written, whether the host can
// apply a change at all. Apply must be idempotent: after a crash the
// daemon applies the same change again. The outcome is what the host says
// the change needs; the plan, computed before, already holds the reboot
// that finalizes a staged OS.
type OSUpdater interface {
	Check(from, to osupdate.Config) error
	Apply(ctx context.Context, from, to osupdate.Config) (osupdate.Outcome, error)
}

// RecordingOSUpdater records each change as a line of a file instead of
// applying it, where no rpm-ostree can run (tests, a local cluster).
type RecordingOSUpdater struct{ Path string }

func (RecordingOSUpdater) Check(_, _ osupdate.Config) error { return nil }

func (r RecordingOSUpdater) Apply(_ context.Context, from, to osupdate.Config) (osupdate.Outcome, error) {
	return osupdate.Outcome{Reboot: true}, durablefile.AppendJSONLine(r.Path, map[string]osupdate.Config{"from": from, "to": to})
}

// PackageUpdater runs a plan's PackageUpdate (osupdate.PackageUpdater on
// the host: apt, or update_engine on Flatcar). Check says, before anything
// is written, whether the host has packages to update; Apply updates them
// and returns what the host says the update needs, which the plan's steps
// follow. Apply must be idempotent: after a crash it runs again.
type PackageUpdater interface {
	Check() error
	Apply(ctx context.Context) (osupdate.Outcome, error)
}

// RecordingPackageUpdater records each package update as a line of Path
// instead of running one, where no package manager can run (tests, a local
// cluster), and answers what the file Answer holds (an osupdate.Outcome in
// JSON; no file: nothing needed), as a host's tools would.
type RecordingPackageUpdater struct{ Path, Answer string }

func (RecordingPackageUpdater) Check() error { return nil }

func (r RecordingPackageUpdater) Apply(context.Context) (osupdate.Outcome, error) {
	var o osupdate.Outcome
	b, err := os.ReadFile(r.Answer)
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &o); err != nil {
			return o, fmt.Errorf("%s: %w", r.Answer, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return o, err
	}
	return o, durablefile.AppendJSONLine(r.Path, map[string]any{"packages": o, "at": time.Now().UTC().Format(time.RFC3339Nano)})
}
