package framework

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"time"
)

// Kubectl runs the real kubectl inside the cluster's network namespace as
// the admin, prints the command and its output, and returns the output.
func (c *Cluster) Kubectl(args ...string) string {
	fmt.Printf("$ kubectl %s\n", shellQuote(args))
	out, _ := c.KubectlQuiet(args...)
	fmt.Print(out)
	return out
}

// KubectlMust is Kubectl, failing with the output when kubectl does.
func (c *Cluster) KubectlMust(args ...string) (string, error) {
	fmt.Printf("$ kubectl %s\n", shellQuote(args))
	out, err := c.KubectlQuiet(args...)
	fmt.Print(out)
	if out != "" && !strings.HasSuffix(out, "\n") {
		fmt.Println()
	}
	if err != nil {
		return out, fmt.Errorf("kubectl %s: %w", shellQuote(args), err)
	}
	return out, nil
}

// KubectlQuiet is Kubectl without printing: the output, and the error
// when kubectl fails.
func (c *Cluster) KubectlQuiet(args ...string) (string, error) {
	return c.KubectlAs("", args...)
}

// KubectlAs runs kubectl as the admin, or with a bearer token if token is
// set (the admin kubeconfig then only gives the server and its CA).
func (c *Cluster) KubectlAs(token string, args ...string) (string, error) {
	out, err := c.kubectlCommand(context.Background(), token, args...).CombinedOutput()
	return string(out), err
}

// kubectlCommand is the kubectl command KubectlAs runs, ended with ctx.
func (c *Cluster) kubectlCommand(ctx context.Context, token string, args ...string) *exec.Cmd {
	// The admin kubeconfig comes from KUBECONFIG: kubectl takes no flag
	// before a plugin's name (kubectl ndp ...).
	argv := append(c.s.nsenter(false), c.Bin("kubectl"))
	if token != "" {
		argv = append(argv, "--token", token)
	}
	argv = append(argv, args...)
	// nsenter execs kubectl (no --fork): ending it ends kubectl.
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	// From the repository's root: a scenario names examples/ as a person
	// there would.
	cmd.Dir = c.Root
	// bin/ on PATH for the ndp plugin (kubectl ndp), which reads KUBECONFIG:
	// kubectl passes plugins none of its flags.
	cmd.Env = []string{"PATH=" + c.Bin("") + ":/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + c.s.work, "KUBECONFIG=" + c.s.admin}
	return cmd
}

// kubectlWatch runs `kubectl args... -o json --watch` and calls object
// with each object it prints until ctx ends (JSON: a watch's
// jsonpath output goes through a tabwriter that turns tabs into spaces).
// A watch the server ends is started again; it lists the objects first,
// so nothing between is lost that the caller keeps as state.
func (c *Cluster) kubectlWatch(ctx context.Context, object func(json.RawMessage), args ...string) {
	for ctx.Err() == nil {
		cmd := c.kubectlCommand(ctx, "", append(args, "-o", "json", "--watch")...)
		out, err := cmd.StdoutPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err == nil {
			dec := json.NewDecoder(out)
			for {
				var raw json.RawMessage
				if dec.Decode(&raw) != nil {
					break
				}
				object(raw)
			}
			_ = cmd.Wait()
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// WaitFor runs kubectl until its output is want, while the cluster makes
// progress: the output itself, and on every node what observeNodes reads
// (its annotations, history, pods and events, its VM's console and units).
// A pod starting on a worker VM of a loaded machine is slow, not stuck: a
// fixed bound failed such runs. The wait ends when nothing moved for the
// stall bound, or at the ceiling; a node's own failure is the scenario's
// to judge, not this wait's.
func (c *Cluster) WaitFor(ctx context.Context, what, want string, args ...string) error {
	return followProgress(ctx, what, minCeiling, func() observation {
		out, err := c.KubectlQuiet(args...)
		if strings.TrimSpace(out) == want {
			return observation{done: true}
		}
		o := c.clusterProgress()
		if err == nil {
			o.progress["output"] = strings.TrimSpace(out)
		}
		return o
	})
}

// clusterProgress is what moves on every node (observeNodes' signals),
// for a wait on something else: progress, no verdict.
func (c *Cluster) clusterProgress() observation {
	names := append([]string{NodeName}, workerNames(c.Workers)...)
	o := c.observeNodes(names, "").observation
	o.failed, o.done = "", false
	return o
}

func shellQuote(args []string) string {
	shown := make([]string, len(args))
	for i, a := range args {
		shown[i] = a
		if strings.ContainsAny(a, "{}[]\"?* '$\n") {
			shown[i] = "'" + strings.ReplaceAll(a, "\n", " ") + "'"
		}
	}
	return strings.Join(shown, " ")
}

func ips(s ...string) []net.IP {
	out := make([]net.IP, len(s))
	for i, a := range s {
		out[i] = net.ParseIP(a)
	}
	return out
}

func randText() string { return rand.Text() }
