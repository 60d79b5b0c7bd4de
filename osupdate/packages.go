package osupdate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// PackageUpdater carries out a plan's PackageUpdate: it updates the
// host's packages to what its sources and pins say (apt on Debian and
// Ubuntu, update_engine on Flatcar, whose OS is one package) and returns
// what the host says the update needs. Hosts whose packages come with
// their OS image (rpm-ostree, bootc) have none to update: a plan that asks
// is refused before anything is written (Check).
type PackageUpdater struct {
	// Root is the host's root; Named the updater ndp-daemon was told to
	// use (--os-updater), "" to choose per host (Choose).
	Root   string
	Named  Kind
	Runner Runner
	// FlatcarPoll is the pause between reads of update_engine's status
	// (10 s if zero).
	FlatcarPoll time.Duration
}

// Check says whether the host can update its packages.
func (u PackageUpdater) Check() error {
	_, err := u.kind()
	return err
}

// kind is the host's package updater. A Debian host whose OS fields
// another updater applies (make cluster's VMs name the rpm-ostree
// stand-in) still has apt for its packages.
func (u PackageUpdater) kind() (Kind, error) {
	d, err := Choose(u.Root, u.Named)
	if err == nil && (d.Kind == KindApt || d.Kind == KindFlatcar) {
		return d.Kind, nil
	}
	if hasApt(u.Root) {
		return KindApt, nil
	}
	if err != nil {
		return "", fmt.Errorf("the plan updates the host's packages (PackageUpdate), but this host has no package updater: %w", err)
	}
	return "", fmt.Errorf("the plan updates the host's packages (PackageUpdate), but this host's updater is %s (%s), whose packages come with its OS image: change osImageURL instead", d.Kind, d.Reason)
}

func hasApt(root string) bool {
	for _, p := range []string{aptGetPath, dpkgPath} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			return false
		}
	}
	return true
}

// Apply updates the packages and says what the update needs.
func (u PackageUpdater) Apply(ctx context.Context) (Outcome, error) {
	k, err := u.kind()
	if err != nil {
		return Outcome{}, err
	}
	if k == KindFlatcar {
		poll := u.FlatcarPoll
		if poll <= 0 {
			poll = 10 * time.Second
		}
		return Flatcar{Runner: u.Runner, Wait: func(ctx context.Context) error {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(poll):
				return nil
			}
		}}.Apply(ctx)
	}
	return Apt{Runner: u.Runner, Root: u.Root}.Apply(ctx)
}
