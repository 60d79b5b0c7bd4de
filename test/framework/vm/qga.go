package vm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// agent is a client of the QEMU guest agent (qemu-ga) on the far end of a
// virtio-serial port, reached through qemu's unix socket for that port.
//
// The protocol is JSON lines, one request answered by one response, with
// no framing beyond that. The socket outlives the guest side: when the
// guest reboots, its agent goes away mid-conversation, whatever was written
// meanwhile waits in qemu until the next agent opens the port, and that one
// answers all of it. So every request carries an id (qemu-ga echoes it,
// errors included) and responses with another id are dropped; after a
// timeout the stream is resynchronised with guest-sync-delimited, whose
// answer is preceded by a 0xFF byte that resets the reader.
type agent struct {
	path string

	mu     sync.Mutex
	conn   net.Conn
	rd     *bufio.Reader
	synced bool
	nextID uint64
	// syncs are the ids of sync requests sent on this connection and not
	// answered yet: any of their answers resynchronises (the agent answers
	// queued requests in order), so a sync that timed out still counts
	// when a booting agent gets to it.
	syncs map[uint64]bool
}

func newAgent(path string) *agent {
	// A random start: ids of an earlier client of the same socket, still
	// queued in qemu, are not taken for ours.
	return &agent{path: path, nextID: rand.Uint64N(1 << 40)}
}

// agentError is an error the agent returned (as opposed to not answering).
type agentError struct {
	Class string `json:"class"`
	Desc  string `json:"desc"`
}

func (e *agentError) Error() string { return e.Desc + " (" + e.Class + ")" }

type response struct {
	ID     json.RawMessage `json:"id"`
	Return json.RawMessage `json:"return"`
	Error  *agentError     `json:"error"`
}

// call sends one command and decodes its return value into out (if not
// nil). It resynchronises first if the stream may hold stale data.
func (a *agent) call(ctx context.Context, cmd string, args, out any) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.ready(ctx); err != nil {
		return err
	}
	id := a.id()
	ret, err := a.roundTrip(ctx, request{Execute: cmd, Arguments: args, ID: id}, func(r *response) bool { return idOf(r) == id })
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	if out != nil {
		if err := json.Unmarshal(ret, out); err != nil {
			return fmt.Errorf("%s: decoding %s: %w", cmd, ret, err)
		}
	}
	return nil
}

// ready connects and, if the stream may hold stale data, resynchronises.
// a.mu is held.
func (a *agent) ready(ctx context.Context) error {
	if err := a.connect(ctx); err != nil {
		return err
	}
	if !a.synced {
		return a.sync(ctx)
	}
	return nil
}

// send sends a command that does not answer when it succeeds
// (guest-shutdown).
func (a *agent) send(ctx context.Context, cmd string, args any) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.ready(ctx); err != nil {
		return err
	}
	a.synced = false // an error answer may come later
	defer a.arm(ctx)()
	return a.write(ctx, nil, request{Execute: cmd, Arguments: args, ID: a.id()})
}

type request struct {
	Execute   string `json:"execute"`
	Arguments any    `json:"arguments,omitempty"`
	ID        uint64 `json:"id"`
}

func (a *agent) id() uint64 {
	a.nextID++
	return a.nextID
}

func (a *agent) connect(ctx context.Context) error {
	if a.conn != nil {
		return nil
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", a.path)
	if err != nil {
		return fmt.Errorf("connecting to the guest agent's socket: %w", err)
	}
	a.conn, a.rd, a.synced, a.syncs = c, bufio.NewReader(c), false, map[uint64]bool{}
	return nil
}

// close drops the connection; the next call reconnects.
func (a *agent) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.drop()
}

func (a *agent) drop() {
	if a.conn != nil {
		_ = a.conn.Close()
	}
	a.conn, a.rd, a.synced, a.syncs = nil, nil, false, nil
}

// sync resynchronises the stream: a 0xFF byte makes the agent drop any
// half-read request, guest-sync-delimited's answer (0xFF, then the id we
// sent) marks where our responses start.
func (a *agent) sync(ctx context.Context) error {
	id := a.id()
	a.syncs[id] = true
	_, err := a.roundTrip(ctx, request{Execute: "guest-sync-delimited", Arguments: map[string]uint64{"id": id}, ID: id},
		func(r *response) bool {
			var n uint64
			return json.Unmarshal(r.Return, &n) == nil && a.syncs[n] || a.syncs[idOf(r)] && r.Error != nil
		}, 0xFF)
	if err != nil {
		return fmt.Errorf("guest-sync-delimited: %w", err)
	}
	// Whatever comes before our next answer is stale: answers to the
	// other syncs, or to requests that timed out.
	clear(a.syncs)
	a.synced = true
	return nil
}

// idOf is a response's id, 0 if none.
func idOf(r *response) uint64 {
	var n uint64
	_ = json.Unmarshal(r.ID, &n)
	return n
}

// roundTrip writes req (after prefix) and reads until a response matches;
// others are stale and dropped. A timeout leaves the stream out of sync; a
// broken connection is dropped.
func (a *agent) roundTrip(ctx context.Context, req request, match func(*response) bool, prefix ...byte) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("not sent: %w", context.Cause(ctx))
	}
	defer a.arm(ctx)()
	if err := a.write(ctx, prefix, req); err != nil {
		return nil, err
	}
	for {
		line, err := a.rd.ReadBytes('\n')
		if err != nil {
			return nil, a.ioError(ctx, err)
		}
		// 0xFF is never part of JSON text: it only marks a sync answer.
		line = bytes.ReplaceAll(line, []byte{0xFF}, nil)
		var r response
		if json.Unmarshal(line, &r) != nil || !match(&r) {
			continue
		}
		if r.Error != nil {
			return nil, r.Error
		}
		return r.Return, nil
	}
}

// arm bounds the connection's reads and writes by ctx: its deadline, and
// its cancellation. The returned function disarms.
func (a *agent) arm(ctx context.Context) func() {
	c := a.conn // not a.conn: the connection may be dropped meanwhile
	dl, _ := ctx.Deadline()
	_ = c.SetDeadline(dl)
	done := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(done)
		_ = c.SetDeadline(time.Now())
	})
	return func() {
		// Once ctx has ended, its AfterFunc may still be about to run on a
		// busy machine: wait for it, or it would cut the next call's
		// deadline short ("no answer in time" within milliseconds).
		if !stop() {
			<-done
		}
	}
}

func (a *agent) write(ctx context.Context, prefix []byte, req request) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := a.conn.Write(append(append(prefix, b...), '\n')); err != nil {
		return a.ioError(ctx, err)
	}
	return nil
}

// ioError turns a read or write failure into the reason: the context's
// end (the agent did not answer in time: resync next time) or a broken
// connection (reconnect next time).
func (a *agent) ioError(ctx context.Context, err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		a.synced = false
		if ctx.Err() != nil {
			return fmt.Errorf("no answer: %w", context.Cause(ctx))
		}
		return errors.New("no answer in time")
	}
	a.drop()
	return fmt.Errorf("guest agent connection: %w", err)
}
