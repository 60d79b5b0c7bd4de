// Command ndp is the node disruption planner's CLI: it shows what a
// MachineConfig change will do to nodes (`ndp plan`), tests policies
// (`ndp test`) and shows a cluster's rollout, node by node (`ndp status`).
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
