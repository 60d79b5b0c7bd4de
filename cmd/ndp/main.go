// Command ndp is the node disruption planner's CLI: it shows what a
// MachineConfig change will do to nodes and why (`ndp plan`, `ndp explain`),
// tests policies (`ndp test`), builds, signs and verifies policy bundles
// (`ndp bundle`), imports the MCO's node disruption policy (`ndp import
// machineconfiguration`), shows a cluster's rollout, node by node (`ndp
// status`), and what a node went through and why (`ndp why`).
// Installed as kubectl-ndp it runs as `kubectl ndp` / `oc ndp`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
