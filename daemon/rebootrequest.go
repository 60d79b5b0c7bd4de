package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/osupdate"
)

// DefaultRebootSentinel is where Debian's and Ubuntu's packages ask for a
// reboot (and kured's default sentinel).
const DefaultRebootSentinel = "/var/run/reboot-required"

// RebootSentinel says whether the host asks for a reboot: a file, and
// optionally a command run on the host whose exit status 0 says yes
// (kured's --reboot-sentinel and --reboot-sentinel-command). The daemon
// only reports what it says; the rollout controller grants the reboot.
type RebootSentinel struct {
	// Path is the file, a host path; "" checks no file.
	Path string
	// Command, when set, runs on the host.
	Command []string
	Runner  osupdate.Runner
}

// RebootRequest is a reboot the host asks for.
type RebootRequest struct {
	// At identifies the request (v1alpha1.RebootRequiredAnnotation): the
	// file's modification time, or when the command first said yes.
	At string `json:"at"`
	// By says what asked: "/var/run/reboot-required (linux-image-amd64)".
	By string `json:"by"`
	// Command: the sentinel command asked, not the file.
	Command bool `json:"command,omitempty"`
}

// check asks the host: nil when it asks nothing. known is the request the
// node carries, kept while the command goes on saying yes.
func (s *RebootSentinel) check(ctx context.Context, root string, known string) (*RebootRequest, error) {
	if s.Path != "" {
		p, err := osupdate.InRoot(root, s.Path)
		if err != nil {
			return nil, err
		}
		st, err := os.Stat(p)
		switch {
		case err == nil:
			by := s.Path
			b, _ := os.ReadFile(p + ".pkgs")
			if pkgs := osupdate.ParseRebootRequiredPkgs(b); len(pkgs) > 0 {
				by += " (" + strings.Join(pkgs, ", ") + ")"
			}
			return &RebootRequest{At: st.ModTime().UTC().Format(time.RFC3339), By: by}, nil
		case !errors.Is(err, fs.ErrNotExist):
			return nil, err
		}
	}
	if len(s.Command) == 0 {
		return nil, nil
	}
	_, err := s.Runner.Run(ctx, osupdate.Command{Args: s.Command})
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return nil, nil // the command says no
	case err != nil:
		return nil, fmt.Errorf("the reboot sentinel command: %w", err)
	}
	at := known
	if at == "" {
		at = time.Now().UTC().Format(time.RFC3339)
	}
	return &RebootRequest{At: at, By: "the command " + strings.Join(s.Command, " "), Command: true}, nil
}

// rebootRequest is what the settled node's host asks, nil for nothing: a
// request that a finished reboot served in this very boot (a sentinel the
// reboot did not remove, a command still saying yes) is not asked again,
// or the node would reboot without end. A failed check is no request.
func (d *Daemon) rebootRequest(ctx context.Context, node *corev1.Node, prev *Journal, boot string) *RebootRequest {
	if d.Sentinel == nil {
		return nil
	}
	req, err := d.Sentinel.check(ctx, d.Host.Path, node.Annotations[v1alpha1.RebootRequiredAnnotation])
	if err != nil {
		d.Log.Error(err, "checking whether the host asks for a reboot")
		return nil
	}
	if req != nil && prev != nil && prev.Requested != nil && prev.Completed && prev.EndBootID == boot && (prev.Requested.At == req.At || req.Command) {
		d.Status.event(node, corev1.EventTypeWarning, "RebootRequestServed", "Reboot",
			fmt.Sprintf("%s still asks for a reboot after the one it asked for: not asked again in this boot", req.By))
		return nil
	}
	return req
}

// grantFor is the rollout controller's grant of req, if the node carries
// one for it.
func grantFor(node *corev1.Node, req *RebootRequest) (v1alpha1.RebootGrant, bool) {
	v, ok := node.Annotations[v1alpha1.RebootGrantAnnotation]
	if !ok || req == nil {
		return v1alpha1.RebootGrant{}, false
	}
	g, err := v1alpha1.ParseRebootGrant(v)
	return g, err == nil && g.Request == req.At && node.Annotations[v1alpha1.RebootRequiredAnnotation] == req.At
}

// startRequestedReboot journals and runs the reboot the rollout
// controller granted.
func (d *Daemon) startRequestedReboot(ctx context.Context, node *corev1.Node, cur *StoredConfig, req *RebootRequest, g v1alpha1.RebootGrant, prev *Journal, boot string) (time.Duration, error) {
	plan := ndpmcv1.RequestedRebootPlan(cur.Name, g.Drain, req.By)
	inherit := prev != nil && prev.Failed != nil && !prev.Failed.Closed && prev.CordonedByDaemon()
	j := newJournal(cur.Name, &plan, cur.Pool, boot, false, inherit)
	j.Requested = req
	j.DrainTimeout = d.sentDrainTimeout(node)
	if err := d.Host.WriteJSON(JournalPath, j); err != nil {
		return 0, err
	}
	d.Status.event(node, corev1.EventTypeNormal, "RebootGranted", "Reboot", "rebooting as requested by the node: "+req.By)
	return d.launch(ctx, node, cur.Name, &update{d: d, j: j}, inherit, boot)
}

// watch wakes the daemon (a send on wake) whenever the sentinel file
// appears or goes, so that a request is reported at once rather than at
// the next SentinelPeriod. Without a directory to watch it returns: the
// period still applies.
func (s *RebootSentinel) watch(ctx context.Context, root string, wake chan<- event.GenericEvent, log logr.Logger) error {
	p, err := osupdate.InRoot(root, s.Path)
	if err != nil {
		log.Error(err, "not watching the reboot sentinel")
		return nil
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		log.Error(err, "not watching the reboot sentinel")
		return nil
	}
	defer w.Close()
	if err := w.Add(filepath.Dir(p)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			log.Info("not watching the reboot sentinel: its directory is not on the host", "dir", filepath.Dir(p))
		} else {
			log.Error(err, "not watching the reboot sentinel", "dir", filepath.Dir(p))
		}
		return nil
	}
	name := filepath.Base(p)
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Events:
			if !ok {
				return nil
			}
			if b := filepath.Base(e.Name); b != name && b != name+".pkgs" {
				continue
			}
			select {
			case wake <- event.GenericEvent{}:
			default: // a wake-up is pending already
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			log.Error(err, "watching the reboot sentinel")
		}
	}
}
