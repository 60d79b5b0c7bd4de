// Command ndp-daemon runs on every node and executes, step by step, the
// plan the plan controller stored for the node's move to its desiredConfig
// (docs/design.md#the-node-daemon). It decides nothing: it links no policy engine.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

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
	"github.com/ndp-dev/ndp/daemon"
)

func main() {
	var (
		nodeName, root, unitDir, systemdAddr, bootIDPath string
		simulateReboot, simulateOS                       string
		metricsAddr, probeAddr                           string
		poll, drainAttempt, evictDelay, drainMax         time.Duration
	)
	flag.StringVar(&nodeName, "node-name", os.Getenv("NODE_NAME"), "the node this daemon runs on (default $NODE_NAME)")
	flag.StringVar(&root, "root", "/", "the host's root directory: files and the daemon's journal are written under it")
	flag.StringVar(&unitDir, "unit-dir", "/etc/systemd/system", "where unit files go, as a path on the host")
	flag.StringVar(&systemdAddr, "systemd-address", "", "D-Bus address of the systemd manager (default: the system manager's private socket)")
	flag.StringVar(&bootIDPath, "boot-id-file", daemon.DefaultBootIDPath, "file holding the current boot's ID")
	flag.StringVar(&simulateReboot, "simulate-reboot", "", "record reboot requests as lines of this file instead of rebooting (tests, local clusters)")
	flag.StringVar(&simulateOS, "simulate-os-updates", "", "record OS changes as lines of this file instead of running rpm-ostree (tests, local clusters)")
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8797", "address of the Prometheus metrics endpoint (0 disables it)")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8798", "address of the health and readiness probes (0 disables them)")
	flag.DurationVar(&poll, "plan-poll-interval", 10*time.Second, "how often to look again for a plan that is not written yet")
	flag.DurationVar(&drainAttempt, "drain-attempt-timeout", 90*time.Second, "deadline of one drain attempt")
	flag.DurationVar(&evictDelay, "drain-evict-retry-delay", 5*time.Second, "pause between evictions a PodDisruptionBudget refused")
	flag.DurationVar(&drainMax, "drain-retry-max", time.Minute, "longest pause between drain attempts")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("ndp-daemon")
	if err := run(log.Info, nodeName, root, unitDir, systemdAddr, bootIDPath, simulateReboot, simulateOS, metricsAddr, probeAddr, poll, drainAttempt, evictDelay, drainMax); err != nil {
		log.Error(err, "exiting")
		os.Exit(1)
	}
}

func run(info func(string, ...any), nodeName, root, unitDir, systemdAddr, bootIDPath, simulateReboot, simulateOS, metricsAddr, probeAddr string, poll, drainAttempt, evictDelay, drainMax time.Duration) error {
	if nodeName == "" {
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
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 s,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: probeAddr,
		// The daemon watches its own Node only: a thousand daemons must not
		// each cache every node.
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Node{}: {Field: fields.OneTermEqualSelector("metadata.name", nodeName)},
		}},
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	host, err := daemon.OpenHost(root, unitDir)
	if err != nil {
		return err
	}
	defer host.Close()
	sd, err := daemon.Connect(ctx, systemdAddr)
	if err != nil {
		return err
	}
	defer sd.Close()
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var rebooter daemon.Rebooter = daemon.SystemdRebooter{Systemd: sd}
	if simulateReboot != "" {
		rebooter = daemon.RecordingRebooter{Path: simulateReboot}
	}
	var osUpdater daemon.OSUpdater = daemon.RpmOstree{Root: root}
	if simulateOS != "" {
		osUpdater = daemon.RecordingOSUpdater{Path: simulateOS}
	}
	d := &daemon.Daemon{
		NodeName: nodeName,
		Client:   mgr.GetClient(),
		Reader:   mgr.GetAPIReader(),
		Host:     host,
		Systemd:  sd,
		OS:       osUpdater,
		Rebooter: rebooter,
		Drainer: &daemon.Drainer{
			Client: clientset, AttemptTimeout: drainAttempt, EvictRetryDelay: evictDelay,
			RetryMin: evictDelay, RetryMax: drainMax, Log: os.Stderr,
		},
		Status:       &daemon.Status{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("ndp-daemon"), NodeName: nodeName},
		BootIDPath:   bootIDPath,
		PollInterval: poll,
		Log:          ctrl.Log.WithName("daemon").WithValues("node", nodeName),
		// Fault injection for the crash tests; unset in production.
		CrashAt: os.Getenv("NDP_DAEMON_CRASH_AT"),
	}
	if err := d.SetupWithManager(mgr); err != nil {
		return err
	}
	if probeAddr != "0" {
		if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
			return err
		}
		if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
			return err
		}
	}
	info("starting", "node", nodeName, "root", root, "unitDir", unitDir)
	return mgr.Start(ctx)
}
