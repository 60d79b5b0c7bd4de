package framework

import (
	"context"
	"fmt"
	"regexp"
	"strings"
)

// What the drain-and-reboot scenario's change (examples/cluster/60-worker-app.yaml)
// is, and why ndp's plan reboots for it: no policy claims the new file, so
// the default (the MCO's) answer holds, a drain and a reboot.
const (
	appMachineConfig = "60-worker-app"
	appChange        = "file /etc/ndp-example/app.conf: added"
	appReason        = "no policy claims this change"
)

// whyMissing reads the text of `kubectl ndp why NODE --update 1` and
// returns what it lacks of the drain-and-reboot update: the configs, the
// change with its MachineConfig and the plan's reason, the plan, a drain
// then a reboot that ran, the result and the boot IDs before and after.
// The lines are those cmd/ndp's why_view.go prints.
//
// resumed, when not empty, is how the update was interrupted, as a step's
// detail says it ("resumed after a restart of the daemon", "resumed after
// an unplanned reboot (boot X -> ").
func whyMissing(out, from, to, bootBefore, bootAfter, resumed string) []string {
	var missing []string
	want := func(what, text string) {
		if !strings.Contains(out, text) {
			missing = append(missing, fmt.Sprintf("%s (%q)", what, strings.TrimSpace(text)))
		}
	}
	if !regexp.MustCompile(`(?m)^Update 1 of \d+ \(newest\): ` + regexp.QuoteMeta(from+" -> "+to) + `$`).MatchString(out) {
		missing = append(missing, fmt.Sprintf("the newest update from %s to %s", from, to))
	}
	want("ndp-daemon as its executor", "\n  Run by:   ndp-daemon\n")
	want("the result", "\n  Result:   Done\n")
	want("the change and its MachineConfig", "\n  "+appChange+" (MachineConfig "+appMachineConfig+")\n")
	want("the default policies' reason", "\n    decided by: no policy -> Reboot ("+appReason+")\n")
	want("the plan", "\nPlanned: drain, Reboot\n")
	// The steps that ran: a drain done, and later a reboot done (a step
	// interrupted and resumed may show more than once).
	ran := out
	if i := strings.Index(ran, "\nRan:\n"); i >= 0 {
		ran = ran[i:]
		if j := strings.Index(ran, "\nBoot: "); j >= 0 {
			ran = ran[:j]
		}
	} else {
		ran = ""
		missing = append(missing, "the steps that ran (Ran:)")
	}
	drain := regexp.MustCompile(`(?m)^  \S+(?: \S+ UTC)?  +drain +Done\b`).FindStringIndex(ran)
	reboot := regexp.MustCompile(`(?m)^  \S+(?: \S+ UTC)?  +reboot +Done\b`).FindAllStringIndex(ran, -1)
	switch {
	case drain == nil && ran != "":
		missing = append(missing, "a drain step done")
	case len(reboot) == 0 && ran != "":
		missing = append(missing, "a reboot step done")
	case ran != "" && reboot[len(reboot)-1][0] < drain[0]:
		missing = append(missing, "a reboot step done after the drain")
	}
	want("the boot IDs before and after", "\nBoot: "+bootBefore+" -> "+bootAfter+" (rebooted)\n")
	if resumed != "" && !strings.Contains(ran, resumed) {
		missing = append(missing, fmt.Sprintf("how the update was interrupted (%q)", resumed))
	}
	return missing
}

// WhyRebooted asks `kubectl ndp why` why the worker rebooted in the
// drain-and-reboot scenario, and checks the answer (whyMissing).
func (c *Cluster) WhyRebooted(ctx context.Context, node, from, to, bootBefore, bootAfter, resumed string) error {
	// The daemon records its history after it reports the node Done: on a
	// loaded machine, seconds later. Wait for the record's result.
	if err := followProgress(ctx, node+"'s history to record its update done", minCeiling, func() observation {
		o := c.clusterProgress()
		out, err := c.KubectlQuiet("ndp", "why", node, "--update", "1")
		if err == nil {
			o.progress["why"] = FirstLine(GrepLine(out, "Result:"), "")
			o.done = strings.Contains(out, "Result:   Done")
		}
		return o
	}); err != nil {
		return err
	}
	out, err := c.KubectlMust("ndp", "why", node, "--update", "1")
	if err != nil {
		return err
	}
	// The record itself, as kubectl shows it (the log keeps a real one).
	c.Kubectl("get", "nodehistory", node, "-o", "yaml")
	missing := whyMissing(out, from, to, bootBefore, bootAfter, resumed)
	// The scenario's OS update (osupdate.go) is part of the same update.
	missing = append(missing, whyOSMissing(out)...)
	if len(missing) > 0 {
		return fmt.Errorf("kubectl ndp why %s: its newest update lacks %s", node, strings.Join(missing, "; "))
	}
	c.Report(fmt.Sprintf("why %s: %s of %s, no policy -> Reboot (%s); osImageURL and kernelArguments added -> Reboot; drain and reboot ran; boot %s -> %s",
		node, appChange, appMachineConfig, appReason, ShortID(bootBefore), ShortID(bootAfter)))
	return nil
}
