package preview

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"golang.org/x/sync/singleflight"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
)

// MachineConfigPreview previews a MachineConfig create, update or delete:
// it finds the pools whose selector matches the object (before or after),
// and its mode's Answers previews each with the change in place (the
// executor's: ndp's plans from the configs the pool's nodes run, and a
// denial of a change no node can apply in place or of an invalid Ignition
// config, with the field).
//
// GitOps tools dry-run the same manifests again and again: answers are
// kept, keyed by the request's objects, the policy revision and the count
// of changes of the cluster objects a preview reads.
type MachineConfigPreview struct {
	Previewer *Previewer
	Answers   Answers
	Decoder   admission.Decoder
	// Deadline bounds a preview (DefaultPreviewDeadline when zero).
	Deadline time.Duration

	answers *bounded[answerKey, answer]
	// inflight computes each answer once when identical requests arrive
	// together (every replica of a GitOps tool syncing at once).
	inflight singleflight.Group
}

// NewMachineConfigPreview returns the handler, with its answer cache.
func NewMachineConfigPreview(p *Previewer, a Answers, d admission.Decoder) *MachineConfigPreview {
	return &MachineConfigPreview{Previewer: p, Answers: a, Decoder: d, answers: newBounded[answerKey, answer](256)}
}

type answerKey struct {
	request  [sha256.Size]byte // see requestDigest
	revision string
	inputs   int64
}

// answer is what a Response is rebuilt from: responses are completed (and
// so modified) by the webhook server, and must not be shared.
type answer struct {
	allowed  bool
	code     int32
	message  string
	warnings []string
}

// state keys an answer to a request (given by its digest) with the state
// of the cluster and the policies. The inputs count is read before the
// answer is computed: an answer is never kept under a count older than the
// state it was computed from.
func (h *MachineConfigPreview) state(request [sha256.Size]byte) answerKey {
	key := answerKey{request: request, inputs: h.Previewer.Inputs()}
	if pl := h.Previewer.Active.Planner(); pl != nil {
		key.revision = pl.Engine.Revision()
	}
	return key
}

// Handle implements admission.Handler.
func (h *MachineConfigPreview) Handle(ctx context.Context, req admission.Request) admission.Response {
	digest, err := requestDigest(req)
	if err != nil {
		resp, _ := h.handle(ctx, req) // which reports the undecodable object
		return resp
	}
	key := h.state(digest)
	if a, ok := h.answers.get(key); ok {
		return a.response()
	}
	v, _, _ := h.inflight.Do(fmt.Sprintf("%x/%s/%d", key.request, key.revision, key.inputs), func() (any, error) {
		resp, final := h.handle(ctx, req)
		a := newAnswer(resp)
		if final {
			h.answers.put(key, a)
		}
		return a, nil
	})
	return v.(answer).response()
}

func newAnswer(r admission.Response) answer {
	a := answer{allowed: r.Allowed, warnings: r.Warnings}
	if r.Result != nil {
		a.code, a.message = r.Result.Code, r.Result.Message
	}
	return a
}

func (a answer) response() admission.Response {
	switch {
	case a.allowed:
		return admission.Allowed(a.message).WithWarnings(a.warnings...)
	case a.code != 0 && a.code != http.StatusForbidden:
		return admission.Errored(a.code, errors.New(a.message))
	default:
		return admission.Denied(a.message)
	}
}

// requestDigest digests what an answer depends on in a request: the
// operation, the name, and the labels and the rest after the metadata
// (spec, status) of both objects. The metadata the API server fills in for
// each request (uid, timestamps, managed fields) is left out, or no two
// dry-runs of a create would share an answer.
func requestDigest(req admission.Request) ([sha256.Size]byte, error) {
	var d [sha256.Size]byte
	h := sha256.New()
	h.Write([]byte(string(req.Operation) + "\x00" + req.Name + "\x00"))
	for _, raw := range [][]byte{req.Object.Raw, req.OldObject.Raw} {
		if len(raw) == 0 {
			h.Write([]byte("none\x00"))
			continue
		}
		labels, rest, err := splitMetadata(raw)
		if err != nil {
			return d, err
		}
		for _, k := range slices.Sorted(maps.Keys(labels)) {
			h.Write([]byte(k + "=" + labels[k] + "\x00"))
		}
		h.Write([]byte{1})
		h.Write(rest)
		h.Write([]byte{0})
	}
	h.Sum(d[:0])
	return d, nil
}

// splitMetadata returns an object's labels and the bytes after its
// metadata. The API server writes apiVersion, kind and metadata before the
// spec, so only those are decoded: a MachineConfig's spec can be large,
// and it is only hashed. Another layout is decoded in full.
func splitMetadata(raw []byte) (map[string]string, []byte, error) {
	type metadata struct {
		Labels map[string]string `json:"labels"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err == nil && t == json.Delim('{') {
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				break
			}
			if k == "metadata" {
				var m metadata
				if err := dec.Decode(&m); err != nil {
					break
				}
				return m.Labels, raw[dec.InputOffset():], nil
			}
			if v, err := dec.Token(); err != nil || v == json.Delim('{') || v == json.Delim('[') {
				break // a composite value before the metadata
			}
		}
	}
	var full struct {
		Metadata metadata        `json:"metadata"`
		Spec     json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(raw, &full); err != nil {
		return nil, nil, err
	}
	return full.Metadata.Labels, full.Spec, nil
}

// handle computes the answer; final is false when it depends on a passing
// condition (a failed read, a deadline), so that it is not kept.
func (h *MachineConfigPreview) handle(ctx context.Context, req admission.Request) (resp admission.Response, final bool) {
	ctx, cancel := context.WithTimeout(ctx, Deadline(h.Deadline))
	defer cancel()
	var candidate, old *ndpmcv1.MachineConfig
	if req.Operation == admissionv1.Create || req.Operation == admissionv1.Update {
		candidate = &ndpmcv1.MachineConfig{}
		if err := h.Decoder.Decode(req, candidate); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding MachineConfig %q: %w", req.Name, err)), false
		}
	}
	if len(req.OldObject.Raw) > 0 {
		old = &ndpmcv1.MachineConfig{}
		if err := h.Decoder.DecodeRaw(req.OldObject, old); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the previous MachineConfig %q: %w", req.Name, err)), false
		}
	}
	var newLabels, oldLabels map[string]string
	for _, mc := range []*ndpmcv1.MachineConfig{candidate, old} {
		// Rendered configs are the render controller's output, not a
		// change of any pool's sources (and the mode may leave others).
		if mc != nil && (mc.Labels[ndpmcv1.RenderedForLabel] != "" || h.Answers.Ignores(mc)) {
			return admission.Allowed(""), true
		}
	}
	if candidate != nil {
		// An invalid Ignition config is refused whichever pool selects it.
		if _, _, err := h.Previewer.candidate(req.Name, candidate); err != nil {
			return h.Answers.InvalidMachineConfig(req.Name, err), true
		}
		newLabels = nonNil(candidate.Labels)
	}
	if old != nil {
		oldLabels = nonNil(old.Labels)
	}
	pools, err := h.Previewer.PoolsSelecting(ctx, newLabels, oldLabels)
	if err != nil {
		return NoPreview(err), false
	}
	if len(pools) == 0 {
		return h.Answers.NoPoolSelects(req.Name), true
	}
	return h.Answers.MachineConfigPools(ctx, req.Name, pools, func(*mcfgv1.MachineConfigPool) Overrides { return Overrides{req.Name: candidate} })
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
