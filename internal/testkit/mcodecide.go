package testkit

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// MCODecision is mco-decide's answer: the MCO's daemon's decision, by its
// own code, for a node moving from one rendered config to another.
type MCODecision struct {
	Reconcilable bool   `json:"reconcilable"`
	Error        string `json:"error"`
	Actions      []struct {
		Type    string `json:"type"`
		Service string `json:"service"`
	} `json:"actions"`
	Drain        bool     `json:"drain"`
	Reboot       bool     `json:"reboot"`
	ChangedFiles []string `json:"changedFiles"`
	ChangedUnits []string `json:"changedUnits"`
	SSHChanged   bool     `json:"sshChanged"`
}

// MCODecide runs mco-decide (tool: its path) on the rendered configs in
// the files from and to ("-empty-" for the daemon's empty config), with
// the MachineConfiguration in the file machineConfiguration ("": the MCO's
// defaults alone). A run that fails fails the test.
func MCODecide(t testing.TB, tool, from, to, machineConfiguration string) MCODecision {
	t.Helper()
	args := []string{"--from", from, "--to", to}
	if machineConfiguration != "" {
		args = append(args, "--machineconfiguration", machineConfiguration)
	}
	cmd := exec.Command(tool, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mco-decide %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var d MCODecision
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatalf("mco-decide's answer %s: %v", out, err)
	}
	return d
}
