package main

import (
	"flag"
	"testing"
	"time"

	"github.com/ndp-dev/ndp/daemon"
)

func parse(t *testing.T, args ...string) config {
	t.Helper()
	var c config
	fs := flag.NewFlagSet("ndp-daemon", flag.ContinueOnError)
	c.bindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestFlagDefaults(t *testing.T) {
	t.Setenv("NODE_NAME", "worker-0")
	want := config{
		NodeName: "worker-0", Root: "/", UnitDir: "/etc/systemd/system", BootIDPath: daemon.DefaultBootIDPath,
		OSUpdater: "auto", RebootSentinel: "/var/run/reboot-required", RebootSentinelPeriod: time.Hour,
		MetricsAddress: ":8797", ProbeAddress: ":8798",
		PollInterval: 10 * time.Second, DrainAttemptTimeout: 90 * time.Second,
		DrainEvictRetryDelay: 5 * time.Second, DrainRetryMax: time.Minute,
	}
	if got := parse(t); got != want {
		t.Errorf("defaults:\n got %+v\nwant %+v", got, want)
	}
}

// Every flag sets its own field: a flag bound to the wrong field, or two
// to the same, fails.
func TestFlagsSetFields(t *testing.T) {
	t.Setenv("NODE_NAME", "worker-0")
	got := parse(t,
		"--node-name", "n",
		"--root", "/r",
		"--unit-dir", "/u",
		"--systemd-address", "unix:path=/s",
		"--boot-id-file", "/b",
		"--simulate-reboot", "/reboots",
		"--simulate-os-updates", "/os",
		"--simulate-package-updates", "/pkgs",
		"--os-updater", "apt",
		"--reboot-sentinel", "/run/r",
		"--reboot-sentinel-command", "/bin/check now",
		"--reboot-sentinel-period", "5m",
		"--metrics-bind-address", ":1",
		"--health-probe-bind-address", "0",
		"--plan-poll-interval", "1s",
		"--drain-attempt-timeout", "2s",
		"--drain-evict-retry-delay", "3s",
		"--drain-retry-max", "4s",
	)
	want := config{
		NodeName: "n", Root: "/r", UnitDir: "/u", SystemdAddress: "unix:path=/s", BootIDPath: "/b",
		SimulateReboot: "/reboots", SimulateOSUpdates: "/os", SimulatePackageUpdates: "/pkgs", OSUpdater: "apt",
		RebootSentinel: "/run/r", RebootSentinelCommand: "/bin/check now", RebootSentinelPeriod: 5 * time.Minute, MetricsAddress: ":1", ProbeAddress: "0",
		PollInterval: time.Second, DrainAttemptTimeout: 2 * time.Second,
		DrainEvictRetryDelay: 3 * time.Second, DrainRetryMax: 4 * time.Second,
	}
	if got != want {
		t.Errorf("flags:\n got %+v\nwant %+v", got, want)
	}
}
