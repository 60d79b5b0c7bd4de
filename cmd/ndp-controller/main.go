// Command ndp-controller runs ndp's controllers in one manager: the policy
// controller, which compiles NodeDisruptionPolicies into the active policy
// set and keeps the default policy in the cluster, and the registries
// controller, which renders image-mirror objects into registries.conf.
package main

import (
	"flag"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ndp-dev/ndp/controllers"
	"github.com/ndp-dev/ndp/planner"
)

func main() {
	var (
		metricsAddr, probeAddr, leaderNS string
		leaderElect                      bool
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint (0 disables it)")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "address of the health and readiness probes")
	flag.BoolVar(&leaderElect, "leader-elect", true, "elect a leader so that one replica acts at a time")
	flag.StringVar(&leaderNS, "leader-election-namespace", "", "namespace of the leader election lease (default: the pod's)")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	setup := ctrl.Log.WithName("setup")

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                  controllers.Scheme(),
		Metrics:                 metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:  probeAddr,
		LeaderElection:          leaderElect,
		LeaderElectionID:        controllers.LeaderElectionID,
		LeaderElectionNamespace: leaderNS,
		Client:                  controllers.ClientOptions(),
	})
	if err != nil {
		setup.Error(err, "creating the manager")
		os.Exit(1)
	}
	if _, err := controllers.SetupWithManager(mgr, planner.EngineOptions{}); err != nil {
		setup.Error(err, "setting up the controllers")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		setup.Error(err, "adding the health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		setup.Error(err, "adding the readiness check")
		os.Exit(1)
	}
	setup.Info("starting the manager")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		setup.Error(err, "running the manager")
		os.Exit(1)
	}
}
