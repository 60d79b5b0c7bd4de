// Command kubectl is upstream kubectl built from the Go module proxy (mirrors
// k8s.io/kubernetes/cmd/kubectl/kubectl.go); Debian's kubectl is too old.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"

	_ "k8s.io/client-go/plugin/pkg/client/auth" // client auth plugins
)

func main() {
	// Set verbosity before the command is built, as upstream does, so -v
	// applies to plugin and .kuberc handling too.
	logs.GlogSetter(cmd.GetLogVerbosity(os.Args)) //nolint:errcheck
	// RunNoErrOutput + CheckErr gives kubectl's usual error text and exit codes.
	if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
		util.CheckErr(err)
	}
}
