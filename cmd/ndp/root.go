package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes of the CLI contract.
const (
	exitOK             = 0
	exitInvalid        = 1 // invalid input or policy
	exitUsage          = 2
	exitUnreconcilable = 3
)

// usageError is a command line the CLI cannot run (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }

// oneArg takes exactly one argument; any other number is a usage error,
// format saying what is wanted and how many were given (%d).
func oneArg(format string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usageError{fmt.Errorf(format, len(args))}
		}
		return nil
	}
}

// exitError carries an exit code chosen by a command (exit 3 prints the
// plan and needs no message).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// run executes the CLI and returns its exit code. Nothing below it may
// panic into the user's terminal: a panic is reported as an internal error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "ndp: internal error: %v\n", r)
			code = exitInvalid
		}
	}()
	root := newRootCommand(filepath.Base(args[0]))
	root.SetArgs(args[1:])
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	var ee exitError
	var ue usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue) || isCobraUsageError(err):
		fmt.Fprintf(stderr, "Error: %v\nRun '%s --help' for usage.\n", err, root.CommandPath())
		return exitUsage
	default:
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return exitInvalid
	}
}

// isCobraUsageError recognises cobra's own argument errors, which it
// returns as plain errors.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "flag needs an argument", "invalid argument", "required flag", "accepts ", "requires at least"} {
		if strings.HasPrefix(msg, p) || strings.Contains(msg, "required flag(s)") {
			return true
		}
	}
	return false
}

func newRootCommand(binary string) *cobra.Command {
	root := &cobra.Command{
		Use:   "ndp",
		Short: "ndp, the node disruption planner: what a machine config change does to nodes, and why",
		Long: `ndp computes, from an old and a new rendered MachineConfig and the NodeDisruptionPolicies in force,
the plan a node follows to apply the change: no action, a service reload or restart, a drain, or a reboot,
with the policy that decided each change. In a cluster, ndp status shows each pool's rollout and where
each node is in its plan, ndp why NODE tells why a node was drained or rebooted, and ndp diff tells
what a set of manifests (a pull request) would do to every pool's nodes before it is applied.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	if strings.HasPrefix(binary, "kubectl-") || strings.HasPrefix(binary, "oc-") {
		// Run as a plugin: help shows how the user invoked it.
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: strings.Replace(binary, "-", " ", 1)}
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newPlanCommand(), newExplainCommand(), newTestCommand(), newBundleCommand(), newStatusCommand())
	root.AddCommand(newImportCommand(), newExportCommand(), newWhyCommand(), newHoldCommand(), newReleaseCommand(), newRetryCommand())
	root.AddCommand(newReleaseMCOEntriesCommand(), newDiffCommand())
	return root
}
