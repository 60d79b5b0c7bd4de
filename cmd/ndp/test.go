package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ndp-dev/ndp/planner/engine"
)

func newTestCommand() *cobra.Command {
	var (
		opts       engine.TestOptions
		noDefaults bool
	)
	cmd := &cobra.Command{
		Use:   "test [PATH]...",
		Short: "Run the Rego tests of policies (the built-in defaults included), like opa test",
		Long: `Run the Rego tests of policies: the regoTests of NodeDisruptionPolicy documents, *_test.rego files,
and the tests inside OPA bundles, in the same sandbox the planner uses. The built-in default policy and
the policy library are tested too (a loaded policy named "default" replaces the built-in one).
Exit code 0 when every test passes, 1 otherwise.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			pols, loose, err := loadPolicies(args, !noDefaults)
			if err != nil {
				return err
			}
			sum, err := engine.RunRegoTests(cmd.Context(), pols, loose, cmd.OutOrStdout(), opts)
			if err != nil {
				return err
			}
			if sum.Failed+sum.Errored > 0 {
				return fmt.Errorf("%d of %d Rego tests failed", sum.Failed+sum.Errored, sum.Passed+sum.Failed+sum.Errored)
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&opts.Verbose, "verbose", "v", false, "report passing tests too")
	cmd.Flags().StringVarP(&opts.Run, "run", "r", "", "run only tests matching this regular expression")
	cmd.Flags().BoolVar(&noDefaults, "no-defaults", false, "do not test the built-in default policy")
	return cmd
}
