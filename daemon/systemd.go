package daemon

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"time"

	sdbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
)

// Systemd is what the daemon asks of systemd. The production
// implementation talks to the system manager over D-Bus; tests give it a
// real user manager over the same protocol.
type Systemd interface {
	// DaemonReload makes systemd re-read unit files.
	DaemonReload(ctx context.Context) error
	// Marker identifies the unit's current run, so that a restarted daemon
	// can tell whether a Reload or Restart it issued before a crash ran.
	Marker(ctx context.Context, unit string) (UnitMarker, error)
	// Reload and Restart run the job, wait for its result and require it
	// to be "done" with the unit active afterwards.
	Reload(ctx context.Context, unit string) error
	Restart(ctx context.Context, unit string) error
	// WaitActive requires the unit to be active (waiting while it is
	// activating or reloading).
	WaitActive(ctx context.Context, unit string) error
	// WaitIdle waits until no job is queued for the unit.
	WaitIdle(ctx context.Context, unit string) error
	// UnitFileState is "enabled", "disabled", "masked", ... or "" when
	// systemd knows no such unit file.
	UnitFileState(ctx context.Context, unit string) (string, error)
	// Enable and Disable change a unit file's enablement (its [Install]
	// symlinks), as systemctl enable/disable do.
	Enable(ctx context.Context, units []string) error
	Disable(ctx context.Context, units []string) error
	// StartUnitIrreversibly starts a unit in replace-irreversibly mode
	// (the reboot target).
	StartUnitIrreversibly(ctx context.Context, unit string) error
}

// UnitMarker is a unit's run as systemd reports it: InvocationID changes
// at every start, StateChange at every change of its active state
// (including active → reloading → active).
type UnitMarker struct {
	InvocationID string `json:"invocationID,omitempty"`
	StateChange  uint64 `json:"stateChange,omitempty"`
}

// DBusSystemd is Systemd over go-systemd's D-Bus connection.
type DBusSystemd struct {
	Conn *sdbus.Conn
	// ActiveTimeout bounds how long a unit may stay "activating" or
	// "reloading" after its job is done.
	ActiveTimeout time.Duration
}

// Connect opens a D-Bus connection to systemd: to the system manager
// (its private socket, as systemctl does) when address is empty, else to
// the manager listening at address (e.g. unix:path=/run/user/0/systemd/private).
func Connect(ctx context.Context, address string) (*DBusSystemd, error) {
	var conn *sdbus.Conn
	var err error
	if address == "" {
		conn, err = sdbus.NewSystemdConnectionContext(ctx)
	} else {
		conn, err = sdbus.NewConnection(func() (*godbus.Conn, error) {
			c, err := godbus.Dial(address, godbus.WithContext(ctx))
			if err != nil {
				return nil, err
			}
			if err := c.Auth([]godbus.Auth{godbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
				_ = c.Close()
				return nil, err
			}
			return c, nil
		})
	}
	if err != nil {
		where := address
		if where == "" {
			where = "the system manager"
		}
		return nil, fmt.Errorf("connecting to systemd (%s): %w", where, err)
	}
	return &DBusSystemd{Conn: conn, ActiveTimeout: 2 * time.Minute}, nil
}

// Close closes the connection.
func (s *DBusSystemd) Close() { s.Conn.Close() }

func (s *DBusSystemd) DaemonReload(ctx context.Context) error { return s.Conn.ReloadContext(ctx) }

func (s *DBusSystemd) Marker(ctx context.Context, unit string) (UnitMarker, error) {
	props, err := s.Conn.GetUnitPropertiesContext(ctx, unit)
	if err != nil {
		return UnitMarker{}, fmt.Errorf("reading %s: %w", unit, err)
	}
	var m UnitMarker
	if id, ok := props["InvocationID"].([]byte); ok && len(id) > 0 {
		m.InvocationID = hex.EncodeToString(id)
	}
	m.StateChange, _ = props["StateChangeTimestampMonotonic"].(uint64)
	return m, nil
}

func (s *DBusSystemd) Reload(ctx context.Context, unit string) error {
	return s.job(ctx, "reload", unit, s.Conn.ReloadUnitContext)
}

func (s *DBusSystemd) Restart(ctx context.Context, unit string) error {
	return s.job(ctx, "restart", unit, s.Conn.RestartUnitContext)
}

func (s *DBusSystemd) StartUnitIrreversibly(ctx context.Context, unit string) error {
	ch := make(chan string, 1)
	_, err := s.Conn.StartUnitContext(ctx, unit, "replace-irreversibly", ch)
	return err
}

// job runs one job and checks its outcome. The result channel is buffered
// (go-systemd would block its dispatcher otherwise); cancelling ctx does not
// cancel the job, only the wait.
func (s *DBusSystemd) job(ctx context.Context, verb, unit string, start func(context.Context, string, string, chan<- string) (int, error)) error {
	ch := make(chan string, 1)
	if _, err := start(ctx, unit, "replace", ch); err != nil {
		return fmt.Errorf("%s %s: %w", verb, unit, err)
	}
	select {
	case result := <-ch:
		if result != "done" {
			return fmt.Errorf("%s %s: job %s%s", verb, unit, result, s.why(ctx, unit))
		}
	case <-ctx.Done():
		return fmt.Errorf("%s %s: waiting for the job: %w", verb, unit, ctx.Err())
	}
	return s.waitActive(ctx, verb, unit)
}

// waitActive requires the unit to be active once its job is done: "done"
// for a reload only means the reload command returned, and a Type=simple
// service is "done" as soon as it forked.
func (s *DBusSystemd) waitActive(ctx context.Context, verb, unit string) error {
	deadline := time.Now().Add(s.ActiveTimeout)
	for {
		p, err := s.Conn.GetUnitPropertyContext(ctx, unit, "ActiveState")
		if err != nil {
			return fmt.Errorf("%s %s: reading its state: %w", verb, unit, err)
		}
		state, _ := p.Value.Value().(string)
		switch state {
		case "active":
			return nil
		case "activating", "reloading":
			if time.Now().After(deadline) {
				return fmt.Errorf("%s %s: still %s after %s", verb, unit, state, s.ActiveTimeout)
			}
		default:
			return fmt.Errorf("%s %s: unit is %s after the job%s", verb, unit, state, s.why(ctx, unit))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// why adds the unit's result (e.g. "exit-code") to an error, if known.
func (s *DBusSystemd) why(ctx context.Context, unit string) string {
	p, err := s.Conn.GetServicePropertyContext(ctx, unit, "Result")
	if err != nil {
		return ""
	}
	if r, _ := p.Value.Value().(string); r != "" && r != "success" {
		return " (result " + r + ")"
	}
	return ""
}

func (s *DBusSystemd) WaitActive(ctx context.Context, unit string) error {
	return s.waitActive(ctx, "check", unit)
}

func (s *DBusSystemd) WaitIdle(ctx context.Context, unit string) error {
	for {
		jobs, err := s.Conn.ListJobsContext(ctx)
		if err != nil {
			return err
		}
		busy := false
		for _, j := range jobs {
			busy = busy || j.Unit == unit
		}
		if !busy {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (s *DBusSystemd) UnitFileState(ctx context.Context, unit string) (string, error) {
	p, err := s.Conn.GetUnitPropertyContext(ctx, unit, "UnitFileState")
	if err != nil {
		return "", err
	}
	state, _ := p.Value.Value().(string)
	return state, nil
}

func (s *DBusSystemd) Enable(ctx context.Context, units []string) error {
	if len(units) == 0 {
		return nil
	}
	_, _, err := s.Conn.EnableUnitFilesContext(ctx, units, false, true)
	return err
}

func (s *DBusSystemd) Disable(ctx context.Context, units []string) error {
	if len(units) == 0 {
		return nil
	}
	_, err := s.Conn.DisableUnitFilesContext(ctx, units, false)
	return err
}
