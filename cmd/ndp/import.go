package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/go-logr/logr"
	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/spf13/cobra"
	"golang.org/x/term"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ndp-dev/ndp/mco/mcoimport"
)

// maxImportBytes bounds what `ndp import` reads from a file or stdin.
const maxImportBytes = 8 << 20

func newImportCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import machineconfiguration FILE|-|cluster",
		Short: "Migrate node disruption policies from the Machine Config Operator into a NodeDisruptionPolicy",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unknown resource %q: ndp imports a machineconfiguration", args[0])}
			}
			return usageError{errors.New("what to import? ndp import machineconfiguration FILE|-|cluster")}
		},
		RunE: func(*cobra.Command, []string) error { return nil },
	}
	cmd.AddCommand(newImportMachineConfigurationCommand())
	return cmd
}

type importOptions struct {
	name           string
	includeCovered bool
	clusterOptions
}

func newImportMachineConfigurationCommand() *cobra.Command {
	o := &importOptions{}
	cmd := &cobra.Command{
		Use:     "machineconfiguration FILE|-|cluster [--name NAME] [--include-covered]",
		Aliases: []string{"machineconfigurations"},
		Short:   "Turn a MachineConfiguration's spec.nodeDisruptionPolicy into an equivalent NodeDisruptionPolicy",
		Long: `Turn the Machine Config Operator's node disruption policies (spec.nodeDisruptionPolicy of the
operator.openshift.io/v1 MachineConfiguration "cluster": files, units, sshkey) into an equivalent
NodeDisruptionPolicy, printed as YAML on stdout, ready for kubectl apply -f -.

FILE is the object as "oc get machineconfiguration cluster -o yaml" prints it (YAML or JSON; a List
or several documents are fine if one of them is "cluster"); "-" reads it from stdin; "cluster" reads
the live object from the cluster, found as kubectl finds it (--kubeconfig, $KUBECONFIG,
~/.kube/config, in-cluster). A file named cluster is ./cluster.

Entries ndp's built-in defaults already cover are left out (--include-covered keeps them), and a
Special action (the MCO's own registries.conf logic) is ndp's default registries rule. The policy
has priority 100, so its entries override the defaults for the same paths, as in the MCO. What was
left out, and which entries override a default, is reported on stderr and as comments at the top
of the YAML.

Exit codes: 0 converted (also when nothing needs importing); 1 invalid input or no cluster; 2 usage.`,
		Args: oneArg("want one FILE, - (stdin) or cluster, got %d arguments"),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args[0]) },
	}
	f := cmd.Flags()
	f.StringVar(&o.name, "name", mcoimport.DefaultName, "metadata.name of the NodeDisruptionPolicy")
	f.BoolVar(&o.includeCovered, "include-covered", false, "also import the entries ndp's built-in defaults already cover")
	o.addClusterFlags(cmd, "with cluster: ")
	return cmd
}

func (o *importOptions) run(cmd *cobra.Command, arg string) error {
	if err := mcoimport.ValidateName(o.name); err != nil {
		return usageError{fmt.Errorf("--name: %w", err)}
	}
	var (
		src      *mcoimport.Source
		warnings []string
		err      error
	)
	switch arg {
	case "cluster":
		src, err = o.readCluster(cmd)
	case "-":
		src, warnings, err = readImport("stdin", cmd.InOrStdin())
	default:
		f, ferr := os.Open(arg)
		if ferr != nil {
			return fmt.Errorf("%s: %w", arg, unwrapOSError(ferr))
		}
		defer f.Close()
		src, warnings, err = readImport(arg, f)
	}
	if err != nil {
		return err
	}
	res, err := mcoimport.Convert(src, mcoimport.Options{Name: o.name, IncludeCovered: o.includeCovered})
	if err != nil {
		return err
	}
	res.Warnings = append(warnings, res.Warnings...)
	out, err := res.YAML()
	if err != nil {
		return err
	}
	if _, err := cmd.OutOrStdout().Write(out); err != nil {
		return err
	}
	// The same report is in the YAML's comments: on a terminal it is
	// already on screen; piped into kubectl apply, stderr is where it
	// shows.
	if !isTerminal(cmd.OutOrStdout()) {
		fmt.Fprintln(cmd.ErrOrStderr(), strings.Join(res.Report(), "\n"))
	}
	return nil
}

func readImport(origin string, r io.Reader) (*mcoimport.Source, []string, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxImportBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", origin, err)
	}
	if len(data) > maxImportBytes {
		return nil, nil, fmt.Errorf("%s: larger than %d MiB: not a MachineConfiguration", origin, maxImportBytes>>20)
	}
	return mcoimport.Read(origin, data)
}

// readCluster reads the live MachineConfiguration "cluster".
func (o *importOptions) readCluster(cmd *cobra.Command) (*mcoimport.Source, error) {
	ctrllog.SetLogger(logr.Discard())
	cfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "ndp-import " + rest.DefaultKubernetesUserAgent()
	s := runtime.NewScheme()
	if err := operatorv1.Install(s); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", cfg.Host, err)
	}
	var mc operatorv1.MachineConfiguration
	switch err := c.Get(cmd.Context(), client.ObjectKey{Name: mcoimport.ClusterName}, &mc); {
	case meta.IsNoMatchError(err):
		return nil, fmt.Errorf("the cluster at %s has no MachineConfiguration API (%s): not an OpenShift cluster? Import a file saved with `oc get machineconfiguration cluster -o yaml` instead", cfg.Host, mcoimport.APIVersion)
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("the cluster at %s has no MachineConfiguration %q", cfg.Host, mcoimport.ClusterName)
	case err != nil:
		return nil, fmt.Errorf("reading MachineConfiguration %q from %s: %w", mcoimport.ClusterName, cfg.Host, err)
	}
	return &mcoimport.Source{Origin: "the cluster at " + cfg.Host, Object: &mc}, nil
}

// isTerminal says whether w is a terminal (not merely a character device
// such as /dev/null).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
