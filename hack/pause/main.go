// Command pause is the pod sandbox ("pause") image of make cluster's node (test/framework),
// built here because nothing may be pulled from outside this machine: as
// PID 1 of a pod it waits for SIGTERM or SIGINT and reaps the children
// that are re-parented to it. The drain scenario also runs it as a
// workload that does nothing.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
