package vm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// qmp runs one QMP command on qemu's monitor socket: connect, read the
// greeting, leave capabilities negotiation, run the command, disconnect.
// qemu serves one monitor client at a time; a connection per command keeps
// nothing to resynchronise. Events on the way are skipped.
func qmp(ctx context.Context, path, cmd string, args any) (json.RawMessage, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("QMP %s: %w", cmd, err)
	}
	defer c.Close()
	dl, _ := ctx.Deadline()
	_ = c.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	defer stop()

	dec := json.NewDecoder(c)
	var greeting struct {
		QMP json.RawMessage `json:"QMP"`
	}
	if err := dec.Decode(&greeting); err != nil || greeting.QMP == nil {
		return nil, fmt.Errorf("QMP %s: no greeting: %v", cmd, err)
	}
	if _, err := qmpRoundTrip(c, dec, "qmp_capabilities", nil, 1); err != nil {
		return nil, fmt.Errorf("QMP %s: %w", cmd, err)
	}
	ret, err := qmpRoundTrip(c, dec, cmd, args, 2)
	if err != nil {
		if cmd == "quit" && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
			return nil, nil // qemu may exit before it answers
		}
		return nil, fmt.Errorf("QMP %s: %w", cmd, err)
	}
	return ret, nil
}

func qmpRoundTrip(c net.Conn, dec *json.Decoder, cmd string, args any, id int) (json.RawMessage, error) {
	b, err := json.Marshal(struct {
		Execute   string `json:"execute"`
		Arguments any    `json:"arguments,omitempty"`
		ID        int    `json:"id"`
	}{cmd, args, id})
	if err != nil {
		return nil, err
	}
	if _, err := c.Write(append(b, '\n')); err != nil {
		return nil, err
	}
	for {
		var r struct {
			ID     *int            `json:"id"`
			Return json.RawMessage `json:"return"`
			Error  *agentError     `json:"error"`
		}
		if err := dec.Decode(&r); err != nil {
			return nil, err
		}
		if r.ID == nil || *r.ID != id {
			continue // an event
		}
		if r.Error != nil {
			return nil, r.Error
		}
		return r.Return, nil
	}
}
