// Command ndp-daemon runs on every node and executes, step by step, the
// plan the plan controller stored for the node's move to its desiredConfig
// (docs/design.md#the-node-daemon). It decides nothing: it links no policy engine.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/daemon"
	"github.com/ndp-dev/ndp/mco/mcoguard"
	"github.com/ndp-dev/ndp/osupdate"
)

// config is what ndp-daemon runs with: the flags, bound to its fields by
// bindFlags.
type config struct {
	NodeName string
	// Root is the host's root directory; UnitDir where unit files go, as a
	// path on the host.
	Root, UnitDir string
	// SystemdAddress is the D-Bus address of the systemd manager (empty:
	// the system manager's private socket).
	SystemdAddress string
	BootIDPath     string
	// SimulateReboot and SimulateOSUpdates, when set, name files that
	// record reboot requests and OS changes instead of doing them.
	SimulateReboot, SimulateOSUpdates string
	// SimulatePackageUpdates, when set, names the file package updates
	// are recorded in; the host's answer is read from it plus ".answer".
	SimulatePackageUpdates string
	// OSUpdater names the host's OS updater ("auto": each host's own
	// /etc/ndp/os-updater, or what its files say).
	OSUpdater string
	// RebootSentinel and RebootSentinelCommand say when the host asks for
	// a reboot (a file, a command); RebootSentinelPeriod how often a
	// settled node is asked.
	RebootSentinel, RebootSentinelCommand string
	RebootSentinelPeriod                  time.Duration
	// MetricsAddress and ProbeAddress are the manager's endpoints ("0"
	// disables them).
	MetricsAddress, ProbeAddress string
	// PollInterval is the daemon's; the rest configure its Drainer.
	PollInterval, DrainAttemptTimeout, DrainEvictRetryDelay, DrainRetryMax time.Duration
}

// bindFlags binds c's fields to flags of fs, with their defaults.
func (c *config) bindFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.NodeName, "node-name", os.Getenv("NODE_NAME"), "the node this daemon runs on (default $NODE_NAME)")
	fs.StringVar(&c.Root, "root", "/", "the host's root directory: files and the daemon's journal are written under it")
	fs.StringVar(&c.UnitDir, "unit-dir", "/etc/systemd/system", "where unit files go, as a path on the host")
	fs.StringVar(&c.SystemdAddress, "systemd-address", "", "D-Bus address of the systemd manager (default: the system manager's private socket)")
	fs.StringVar(&c.BootIDPath, "boot-id-file", daemon.DefaultBootIDPath, "file holding the current boot's ID")
	fs.StringVar(&c.SimulateReboot, "simulate-reboot", "", "record reboot requests as lines of this file instead of rebooting (tests, local clusters)")
	fs.StringVar(&c.SimulateOSUpdates, "simulate-os-updates", "", "record OS changes as lines of this file instead of running rpm-ostree (tests, local clusters)")
	fs.StringVar(&c.SimulatePackageUpdates, "simulate-package-updates", "", "record package updates as lines of this file instead of running apt, and answer what FILE.answer holds (an outcome in JSON: reboot, restart; tests, local clusters)")
	fs.StringVar(&c.OSUpdater, "os-updater", "auto", "the hosts' OS updater: auto (a host's /etc/ndp/os-updater, else detected from its files), rpm-ostree, apt, flatcar or bootc")
	fs.StringVar(&c.RebootSentinel, "reboot-sentinel", daemon.DefaultRebootSentinel, "a file on the host whose presence asks for a reboot, granted through the pool's rollout (\"\" checks none)")
	fs.StringVar(&c.RebootSentinelCommand, "reboot-sentinel-command", "", "a command run on the host (words split at spaces) whose exit status 0 asks for a reboot")
	fs.DurationVar(&c.RebootSentinelPeriod, "reboot-sentinel-period", time.Hour, "how often a settled node's sentinel is checked besides the file's watch: the command's only check (kured's --period)")
	fs.StringVar(&c.MetricsAddress, "metrics-bind-address", ":8797", "address of the Prometheus metrics endpoint (0 disables it)")
	fs.StringVar(&c.ProbeAddress, "health-probe-bind-address", ":8798", "address of the health and readiness probes (0 disables them)")
	fs.DurationVar(&c.PollInterval, "plan-poll-interval", 10*time.Second, "how often to look again for a plan that is not written yet")
	fs.DurationVar(&c.DrainAttemptTimeout, "drain-attempt-timeout", 90*time.Second, "deadline of one drain attempt")
	fs.DurationVar(&c.DrainEvictRetryDelay, "drain-evict-retry-delay", 5*time.Second, "pause between evictions a PodDisruptionBudget refused")
	fs.DurationVar(&c.DrainRetryMax, "drain-retry-max", time.Minute, "longest pause between drain attempts")
}

func main() {
	var c config
	c.bindFlags(flag.CommandLine)
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("ndp-daemon")
	if err := run(log.Info, c); err != nil {
		log.Error(err, "exiting")
		os.Exit(1)
	}
}

func run(info func(string, ...any), c config) error {
	if c.NodeName == "" {
		return fmt.Errorf("--node-name (or $NODE_NAME) is required")
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return err
	}
	if err := ndpmcv1.AddToScheme(s); err != nil {
		return err
	}
	// NodeHistory: the record of the node's updates.
	if err := v1alpha1.AddToScheme(s); err != nil {
		return err
	}
	// The ClusterOperator machine-config tells the MCO manages the node
	// (mcoguard).
	if err := configv1.AddToScheme(s); err != nil {
		return err
	}
	// The MCO's ClusterOperator and DaemonSet, each watched by name: a Sync
	// asks the guard, not the API server, and their coming or going wakes
	// the daemon.
	guard, err := mcoguard.NewGuardForConfig(cfg)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 s,
		Metrics:                metricsserver.Options{BindAddress: c.MetricsAddress},
		HealthProbeBindAddress: c.ProbeAddress,
		// The daemon watches its own Node only: a thousand daemons must not
		// each cache every node.
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Node{}: {Field: fields.OneTermEqualSelector("metadata.name", c.NodeName)},
		}},
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if err := mgr.Add(guard); err != nil {
		return err
	}
	host, err := daemon.OpenHost(c.Root, c.UnitDir)
	if err != nil {
		return err
	}
	defer host.Close()
	sd, err := daemon.Connect(ctx, c.SystemdAddress)
	if err != nil {
		return err
	}
	defer sd.Close()
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var rebooter daemon.Rebooter = daemon.SystemdRebooter{Systemd: sd}
	if c.SimulateReboot != "" {
		rebooter = daemon.RecordingRebooter{Path: c.SimulateReboot}
	}
	named, err := osupdate.ParseKind(c.OSUpdater)
	if err != nil {
		return fmt.Errorf("--os-updater: %w", err)
	}
	var osUpdater daemon.OSUpdater = osupdate.ConfigUpdater{Root: c.Root, Named: named, Runner: osupdate.HostRunner{Root: c.Root}}
	if det, err := osupdate.Choose(c.Root, named); err != nil {
		info("no OS updater for this host: OS changes will be refused", "reason", err.Error())
	} else {
		info("OS updater", "kind", det.Kind, "chosen by", det.Reason)
	}
	if c.SimulateOSUpdates != "" {
		osUpdater = daemon.RecordingOSUpdater{Path: c.SimulateOSUpdates}
	}
	var packages daemon.PackageUpdater = osupdate.PackageUpdater{Root: c.Root, Named: named, Runner: osupdate.HostRunner{Root: c.Root}}
	if c.SimulatePackageUpdates != "" {
		packages = daemon.RecordingPackageUpdater{Path: c.SimulatePackageUpdates, Answer: c.SimulatePackageUpdates + ".answer"}
	}
	d := &daemon.Daemon{
		NodeName: c.NodeName,
		Client:   mgr.GetClient(),
		Reader:   mgr.GetAPIReader(),
		Nodes:    mgr.GetClient(), // the cache of its own Node
		MCO:      guard,
		Host:     host,
		Systemd:  sd,
		OS:       osUpdater,
		Packages: packages,
		Rebooter: rebooter,
		Drainer: &daemon.Drainer{
			Client: clientset, AttemptTimeout: c.DrainAttemptTimeout, EvictRetryDelay: c.DrainEvictRetryDelay,
			RetryMin: c.DrainEvictRetryDelay, RetryMax: c.DrainRetryMax, Log: os.Stderr,
		},
		Status:       &daemon.Status{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("ndp-daemon"), NodeName: c.NodeName},
		BootIDPath:   c.BootIDPath,
		PollInterval: c.PollInterval,
		Sentinel: &daemon.RebootSentinel{Path: c.RebootSentinel, Command: strings.Fields(c.RebootSentinelCommand),
			Runner: osupdate.HostRunner{Root: c.Root}},
		SentinelPeriod: c.RebootSentinelPeriod,
		Log:            ctrl.Log.WithName("daemon").WithValues("node", c.NodeName),
		// Fault injection for the crash tests; unset in production.
		CrashAt: os.Getenv("NDP_DAEMON_CRASH_AT"),
	}
	if err := d.SetupWithManager(mgr); err != nil {
		return err
	}
	if c.ProbeAddress != "0" {
		if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
			return err
		}
		if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
			return err
		}
	}
	info("starting", "node", c.NodeName, "root", c.Root, "unitDir", c.UnitDir)
	return mgr.Start(ctx)
}
