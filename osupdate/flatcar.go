package osupdate

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Flatcar updates a Flatcar Container Linux host through update_engine:
// the update is written to the other of the A/B USR partitions and takes
// effect at the next boot. What version comes is update_engine's server's
// answer for the host's group (/etc/flatcar/update.conf, a file the
// rendered config writes like any other). locksmithd, Flatcar's own reboot
// manager, must be masked: ndp reboots the node through its rollout.
type Flatcar struct {
	Runner Runner
	// Wait polls update_engine's status until the update is written or
	// fails; between polls it returns an error only if ctx ends.
	Wait func(ctx context.Context) error
}

const updateEngineClientPath = "/usr/bin/update_engine_client"

// Steps: ask update_engine to check and download now, then read its
// status until it needs a reboot (or says why not).
func (f Flatcar) Steps() []Command {
	return []Command{
		cmd(updateEngineClientPath, "-check_for_update"),
		cmd(updateEngineClientPath, "-status"),
	}
}

// Apply starts the update and waits for update_engine to have written it.
// Idempotent: a check while an update is already written changes nothing.
func (f Flatcar) Apply(ctx context.Context) (Outcome, error) {
	steps := f.Steps()
	st, err := f.status(ctx, steps[1])
	if err != nil {
		return Outcome{}, err
	}
	if st.Op != UpdateEngineNeedReboot {
		if _, err := f.Runner.Run(ctx, steps[0]); err != nil {
			return Outcome{}, err
		}
	}
	for {
		st, err = f.status(ctx, steps[1])
		if err != nil {
			return Outcome{}, err
		}
		switch st.Op {
		case UpdateEngineNeedReboot:
			return Outcome{Reboot: true, RequestedBy: []string{"update_engine: Flatcar " + st.NewVersion + " written to the other USR partition"}}, nil
		case UpdateEngineIdle:
			// Nothing to update: the server offers the running version.
			return Outcome{}, nil
		case UpdateEngineReportingError, UpdateEngineDisabled:
			return Outcome{}, fmt.Errorf("update_engine: %s", st.Op)
		}
		if err := f.Wait(ctx); err != nil {
			return Outcome{}, fmt.Errorf("waiting for update_engine (last %s, progress %.0f%%): %w", st.Op, st.Progress*100, err)
		}
	}
}

func (f Flatcar) status(ctx context.Context, c Command) (UpdateEngineStatus, error) {
	out, err := f.Runner.Run(ctx, c)
	if err != nil {
		return UpdateEngineStatus{}, err
	}
	return ParseUpdateEngineStatus(out)
}

// update_engine's operations (CURRENT_OP), those ndp acts on.
const (
	UpdateEngineIdle           = "UPDATE_STATUS_IDLE"
	UpdateEngineNeedReboot     = "UPDATE_STATUS_UPDATED_NEED_REBOOT"
	UpdateEngineReportingError = "UPDATE_STATUS_REPORTING_ERROR_EVENT"
	UpdateEngineDisabled       = "UPDATE_STATUS_DISABLED"
)

// UpdateEngineStatus is `update_engine_client -status`'s answer.
type UpdateEngineStatus struct {
	Op          string
	NewVersion  string
	Progress    float64
	NewSize     int64
	LastChecked int64
}

// ParseUpdateEngineStatus reads update_engine_client -status: KEY=value
// lines (LAST_CHECKED_TIME, PROGRESS, CURRENT_OP, NEW_VERSION, NEW_SIZE).
// Other lines (the client's log) are skipped; a status without CURRENT_OP,
// or a number that does not parse, is an error naming it.
func ParseUpdateEngineStatus(out []byte) (UpdateEngineStatus, error) {
	var s UpdateEngineStatus
	sc := bufio.NewScanner(bytes.NewReader(out))
	for n := 1; sc.Scan(); n++ {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			continue
		}
		var err error
		switch k {
		case "CURRENT_OP":
			if !strings.HasPrefix(v, "UPDATE_STATUS_") {
				return UpdateEngineStatus{}, fmt.Errorf("line %d: CURRENT_OP %q is not an update_engine status", n, v)
			}
			s.Op = v
		case "NEW_VERSION":
			s.NewVersion = v
		case "PROGRESS":
			s.Progress, err = strconv.ParseFloat(v, 64)
		case "NEW_SIZE":
			s.NewSize, err = strconv.ParseInt(v, 10, 64)
		case "LAST_CHECKED_TIME":
			s.LastChecked, err = strconv.ParseInt(v, 10, 64)
		}
		if err != nil {
			return UpdateEngineStatus{}, fmt.Errorf("line %d: %s=%q: not a number", n, k, v)
		}
	}
	if s.Op == "" {
		return UpdateEngineStatus{}, fmt.Errorf("no CURRENT_OP in update_engine_client -status's output")
	}
	return s, sc.Err()
}
