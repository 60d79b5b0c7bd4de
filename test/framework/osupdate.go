package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The OS update the drain-and-reboot scenario carries: an osImageURL and a
// kernel argument in a MachineConfig of their own, applied with
// 60-worker-app, so that the one reboot per node it already costs also
// boots the new OS (no third reboot per node). The worker VMs' rpm-ostree
// is hack/rpm-ostree-standin: it logs each call, stages the change and its
// boot unit makes it current at the next boot.
const (
	// OSMachineConfig is the name of OSUpdateMC, the MachineConfig.
	OSMachineConfig = "70-worker-os"
	osImage         = "quay.io/ndp-example/os@sha256:5f0c9a1a2e6b8f0d7c3e4b5a69788796a5b4c3d2e1f00112233445566778899a"
	osKarg          = "ndp.example=os-update"
	// standinDir is the stand-in's state on the VMs.
	standinDir = "/var/lib/rpm-ostree-standin"
)

// OSUpdateMC is the OS update, for the worker pool.
const OSUpdateMC = `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: ` + OSMachineConfig + `
  labels: {machineconfiguration.openshift.io/role: worker}
spec:
  osImageURL: ` + osImage + `
  kernelArguments: [` + osKarg + `]
  config:
    ignition: {version: 3.4.0}
`

// osCommandLines are the rpm-ostree command lines ndp-daemon must run for
// the OS update (daemon.RpmOstree), in order, from a config without
// osImageURL or kernel arguments.
var osCommandLines = [][]string{
	{"rebase", "--experimental", "ostree-unverified-registry:" + osImage},
	{"kargs", "--append-if-missing=" + osKarg},
}

// StandinCall is a line of the stand-in's call log.
type StandinCall struct {
	At    string   `json:"at"`
	Boot  string   `json:"boot"`
	Argv  []string `json:"argv"`
	Error string   `json:"error"`
}

// standinDeployment is the stand-in's booted.json.
type standinDeployment struct {
	Image    string   `json:"image"`
	Kargs    []string `json:"kargs"`
	BootedIn string   `json:"bootedIn"`
}

// StandinCalls reads the stand-in's call log on the worker (none yet: empty).
func (c *Cluster) StandinCalls(ctx context.Context, w *Worker) ([]StandinCall, error) {
	out, err := w.VM.Run(ctx, "sh", "-c", "cat "+standinDir+"/calls 2>/dev/null || true")
	if err != nil {
		return nil, fmt.Errorf("%s: the rpm-ostree stand-in's calls: %w", w.Name, err)
	}
	return parseCalls(out)
}

func parseCalls(out string) ([]StandinCall, error) {
	var calls []StandinCall
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		var c StandinCall
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			return nil, fmt.Errorf("the rpm-ostree stand-in's call log: %q: %w", l, err)
		}
		calls = append(calls, c)
	}
	return calls, nil
}

// callsMismatch says how the calls the daemon made for the OS update
// differ from osCommandLines, "" if they match: every call accepted and
// made before the reboot (not in boot); the command lines in order, started
// over only where the daemon's OS step ran again after a restart (Apply is
// idempotent: each attempt but the last may stop short); the attempts are
// returned.
func callsMismatch(calls []StandinCall, boot string) (string, int) {
	attempts, next := 0, 0 // next: the index in osCommandLines the next call must have
	for i, c := range calls {
		switch {
		case c.Error != "":
			return fmt.Sprintf("call %d %q refused: %s", i+1, c.Argv, c.Error), 0
		case c.Boot == boot:
			return fmt.Sprintf("call %d %q ran in the boot after the reboot (%s)", i+1, c.Argv, ShortID(boot)), 0
		case slices.Equal(c.Argv, osCommandLines[0]):
			attempts, next = attempts+1, 1
		case next > 0 && next < len(osCommandLines) && slices.Equal(c.Argv, osCommandLines[next]):
			next++
		default:
			return fmt.Sprintf("call %d is %q, want %q", i+1, c.Argv, osCommandLines[next%len(osCommandLines)]), 0
		}
	}
	if next != len(osCommandLines) {
		return fmt.Sprintf("%d call(s), the last attempt incomplete: want %q", len(calls), osCommandLines), 0
	}
	return "", attempts
}

// OSUpdatedOn checks the OS update on the worker after its reboot into
// boot: the command lines the daemon ran (the calls after the first
// before), and the stand-in's booted deployment, made current by this
// boot, naming the new image and kernel argument, nothing left staged.
func (c *Cluster) OSUpdatedOn(ctx context.Context, w *Worker, before int, boot string) error {
	calls, err := c.StandinCalls(ctx, w)
	if err != nil {
		return err
	}
	if before > len(calls) {
		return fmt.Errorf("%s: the stand-in's call log shrank (%d -> %d lines)", w.Name, before, len(calls))
	}
	calls = calls[before:]
	for _, cl := range calls {
		fmt.Printf("%s: rpm-ostree %s  (boot %s, %s)\n", w.Name, strings.Join(cl.Argv, " "), ShortID(cl.Boot), cl.At)
	}
	mismatch, times := callsMismatch(calls, boot)
	if mismatch != "" {
		return fmt.Errorf("%s: the rpm-ostree command lines ndp-daemon ran: %s", w.Name, mismatch)
	}
	b, err := w.VM.ReadFile(ctx, standinDir+"/booted.json")
	if err != nil {
		return fmt.Errorf("%s: the stand-in's booted deployment: %w", w.Name, err)
	}
	var d standinDeployment
	if err := json.Unmarshal(b, &d); err != nil {
		return fmt.Errorf("%s: %s/booted.json: %w", w.Name, standinDir, err)
	}
	staged, err := w.VM.Run(ctx, "sh", "-c", "test -e "+standinDir+"/staged.json && echo staged || true")
	if err != nil {
		return err
	}
	status, _ := w.VM.Run(ctx, "rpm-ostree", "status")
	fmt.Printf("%s: rpm-ostree status\n%s", w.Name, status)
	line := fmt.Sprintf("%s: OS update: rpm-ostree rebase and kargs --append-if-missing=%s run before the reboot (%d attempt(s)); booted %s with kargs %q, made current in boot %s",
		w.Name, osKarg, times, d.Image, d.Kargs, ShortID(d.BootedIn))
	fmt.Println(line)
	c.Report(line)
	if d.Image != osImage || !slices.Equal(d.Kargs, []string{osKarg}) || d.BootedIn != boot || strings.TrimSpace(staged) != "" {
		return fmt.Errorf("%s: want the booted deployment %s with kargs [%s], made current by boot %s, nothing staged; got %+v, staged %q",
			w.Name, osImage, osKarg, ShortID(boot), d, strings.TrimSpace(staged))
	}
	return nil
}

// whyOSMissing reads `kubectl ndp why NODE --update 1` for the OS part of
// the drain-and-reboot update: the osImageURL and kernelArguments changes,
// each from the OS MachineConfig, each planned as a reboot.
func whyOSMissing(out string) []string {
	var missing []string
	for _, field := range []string{"osImageURL", "kernelArguments"} {
		re := regexp.MustCompile(`(?m)^  ` + field + `: (?:added|changed) \(MachineConfig ` + OSMachineConfig + `\)\n    decided by: [^\n]*-> Reboot\b`)
		if !re.MatchString(out) {
			missing = append(missing, fmt.Sprintf("the %s change from %s, decided as a reboot", field, OSMachineConfig))
		}
	}
	return missing
}
