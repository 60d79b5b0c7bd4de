package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/spf13/cobra"

	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/loader"
	"github.com/ndp-dev/ndp/planner/policy"
)

func newBundleCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bundle",
		Short: "Build, sign and verify OPA bundles of policies, as template owners ship them",
	}
	cmd.AddCommand(newBundleBuildCommand(), newBundleSignCommand(), newBundleVerifyCommand())
	return cmd
}

func readKey(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	key, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", path, unwrapOSError(err))
	}
	return key, nil
}

func newBundleBuildCommand() *cobra.Command {
	var (
		out, signingKey, name string
		priority              int32
	)
	cmd := &cobra.Command{
		Use:   "build DIR -o FILE.tar.gz [--signing-key KEY.pem]",
		Short: "Package a policy directory (Rego modules and *_test.rego) as an OPA bundle",
		Long: `Package a policy directory as an OPA bundle: its Rego modules and tests, a manifest with roots
ndp/policy/<name>, a revision digesting the files, and metadata name and priority. The policy is
compiled in the planner's sandbox first. With --signing-key (a PEM RSA or ECDSA private key) the
bundle carries a signature over every file; clusters that configure the public key reject a bundle
that is unsigned or altered. Run 'ndp test DIR' before building.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageError{fmt.Errorf("give the output file with -o")}
			}
			key, err := readKey(signingKey)
			if err != nil {
				return err
			}
			opts := loader.BundleOptions{Name: name, SigningKey: key, Check: planner.CheckPolicy}
			if cmd.Flags().Changed("priority") {
				opts.Priority = &priority
			}
			b, err := loader.BuildBundle(args[0], opts)
			if err != nil {
				return err
			}
			if err := writeBundleFile(out, b); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: policy %v, revision %s, %d files, signed: %t\n",
				out, b.Manifest.Metadata["name"], b.Manifest.Revision, len(b.Modules), len(b.Signatures.Signatures) > 0)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the bundle file to write (.tar.gz)")
	cmd.Flags().StringVar(&signingKey, "signing-key", "", "PEM private key (RSA or ECDSA) to sign the bundle with")
	cmd.Flags().StringVar(&name, "name", "", "policy name (default: the package root ndp.policy.<name>)")
	cmd.Flags().Int32Var(&priority, "priority", 100, "policy priority")
	return cmd
}

func newBundleSignCommand() *cobra.Command {
	var out, signingKey string
	cmd := &cobra.Command{
		Use:   "sign FILE.tar.gz --signing-key KEY.pem [-o OUT.tar.gz]",
		Short: "Sign (or re-sign) an existing bundle",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if signingKey == "" {
				return usageError{fmt.Errorf("--signing-key is required")}
			}
			key, err := readKey(signingKey)
			if err != nil {
				return err
			}
			f, err := os.Open(args[0])
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], unwrapOSError(err))
			}
			b, err := loader.ReadUnverifiedBundle(f)
			_ = f.Close()
			if err != nil {
				return fmt.Errorf("%s: invalid OPA bundle: %w", args[0], err)
			}
			if err := loader.SignBundle(b, key); err != nil {
				return err
			}
			if out == "" {
				out = args[0]
			}
			if err := writeBundleFile(out, b); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "signed %s\n", out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "where to write the signed bundle (default: in place)")
	cmd.Flags().StringVar(&signingKey, "signing-key", "", "PEM private key (RSA or ECDSA)")
	return cmd
}

func newBundleVerifyCommand() *cobra.Command {
	var publicKey string
	cmd := &cobra.Command{
		Use:   "verify FILE.tar.gz --public-key KEY.pem",
		Short: "Check a bundle's signature and file digests, and that its policy compiles",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if publicKey == "" {
				return usageError{fmt.Errorf("--public-key is required")}
			}
			key, err := readKey(publicKey)
			if err != nil {
				return err
			}
			pol, err := loader.ReadBundleFile(args[0], key)
			if err != nil {
				return err
			}
			if _, err := engine.New(cmd.Context(), []policy.Policy{pol}, engine.Options{}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: signature verified; policy %s, priority %d, %d modules, %d test files\n",
				args[0], pol.Name, pol.Priority, len(pol.Modules), len(pol.Tests))
			return nil
		},
	}
	cmd.Flags().StringVar(&publicKey, "public-key", "", "PEM public key the bundle must be signed for")
	return cmd
}

func writeBundleFile(path string, b *bundle.Bundle) error {
	var buf bytes.Buffer
	if err := loader.WriteBundle(&buf, b); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("%s: %w", path, unwrapOSError(err))
	}
	return nil
}

func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError{fmt.Errorf("%s takes %d argument(s), got %d", cmd.Name(), n, len(args))}
		}
		return nil
	}
}
