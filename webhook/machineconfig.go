package webhook

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
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"golang.org/x/sync/singleflight"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
)

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigs;machineconfigpools,verbs=get;list;watch

// MachineConfigPreview previews a MachineConfig create, update or delete:
// for each pool whose selector matches the object (before or after), it
// renders the pool with the change in place and plans from the configs the
// pool's nodes run. The plans come back as warnings; a change no node can
// apply in place, or an invalid Ignition config, is denied with the field.
//
// GitOps tools dry-run the same manifests again and again: answers are
// kept, keyed by the request's objects, the policy revision and the count
// of changes of the cluster objects a preview reads.
type MachineConfigPreview struct {
	Previewer *Previewer
	Decoder   admission.Decoder
	// Deadline bounds a preview (DefaultPreviewDeadline when zero).
	Deadline time.Duration

	answers *bounded[answerKey, answer]
	// inflight computes each answer once when identical requests arrive
	// together (every replica of a GitOps tool syncing at once).
	inflight singleflight.Group
}

// NewMachineConfigPreview returns the handler, with its answer cache.
func NewMachineConfigPreview(p *Previewer, d admission.Decoder) *MachineConfigPreview {
	return &MachineConfigPreview{Previewer: p, Decoder: d, answers: newBounded[answerKey, answer](256)}
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
	ctx, cancel := context.WithTimeout(ctx, previewDeadline(h.Deadline))
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
		// change of any pool's sources.
		if mc != nil && mc.Labels[ndpmcv1.RenderedForLabel] != "" {
			return admission.Allowed(""), true
		}
		// The MCO's rendered configs are owned by their pool.
		if h.Previewer.Advisor && mc != nil && slices.ContainsFunc(mc.OwnerReferences, func(r metav1.OwnerReference) bool { return r.Kind == "MachineConfigPool" }) {
			return admission.Allowed(""), true
		}
	}
	if candidate != nil {
		// An invalid Ignition config is refused whichever pool selects it.
		if _, _, err := h.Previewer.candidate(req.Name, candidate); err != nil {
			if h.Previewer.Advisor {
				// The MCO admits it, and its render controller refuses it.
				return admission.Allowed("").WithWarnings(fitMCOWarnings([]string{fmt.Sprintf("MCO: the render controller refuses MachineConfig %s, the pools selecting it go Degraded: %v", req.Name, err)})...), true
			}
			return admission.Denied(err.Error()), true // names the object and the field
		}
		newLabels = nonNil(candidate.Labels)
	}
	if old != nil {
		oldLabels = nonNil(old.Labels)
	}
	pools, err := h.Previewer.PoolsSelecting(ctx, newLabels, oldLabels)
	if err != nil {
		return noPreview(err), false
	}
	if len(pools) == 0 {
		prefix := ""
		if h.Previewer.Advisor {
			prefix = "MCO: "
		}
		return admission.Allowed("").WithWarnings(fmt.Sprintf("%sMachineConfig %s is selected by no MachineConfigPool: no node is affected", prefix, req.Name)), true
	}
	overrides := func(*mcfgv1.MachineConfigPool) Overrides { return Overrides{req.Name: candidate} }
	if h.Previewer.Advisor {
		return advisorPools(ctx, h.Previewer, pools, overrides, fmt.Sprintf("MachineConfig %s", req.Name)), true
	}
	return previewPools(ctx, h.Previewer, pools, overrides, "", fmt.Sprintf("MachineConfig %q", req.Name))
}

// previewPools previews each pool and answers: the warnings, or a denial
// when the change is invalid or unreconcilable. Any other failure (a
// missing policy set, an unreadable cluster, a deadline) allows the
// request with a warning, as the preview never blocks a change by itself;
// complete is false then.
func previewPools(ctx context.Context, p *Previewer, pools []*mcfgv1.MachineConfigPool, overrides func(*mcfgv1.MachineConfigPool) Overrides, prefix, object string) (resp admission.Response, complete bool) {
	var warnings, unreconcilable []string
	complete = true
	for _, pool := range pools {
		pp, err := p.Preview(ctx, pool, overrides(pool))
		var invalid *InvalidChangeError
		switch {
		case errors.As(err, &invalid):
			return admission.Denied(fmt.Sprintf("%s is invalid: %v", object, invalid.Err)), true
		case err != nil:
			warnings = append(warnings, fmt.Sprintf("%sno preview for pool %s: %v", prefix, pool.Name, err))
			complete = false
			continue
		}
		for _, u := range pp.Unreconcilable {
			unreconcilable = append(unreconcilable, fmt.Sprintf("pool %s, %s", pool.Name, u))
		}
		// When the change would start under the pool's rollout policies,
		// not at all for a pool no policy selects. It changes with the
		// clock and the policies, which the answer cache does not key
		// on: an answer that says it is not kept (the renderings and
		// plans under it still are).
		start := ""
		if policies, err := p.rolloutPolicies(ctx, pool); err != nil {
			start = "no rollout policy preview: " + err.Error()
		} else {
			start = rolloutStart(policies, pp, time.Now())
		}
		if start != "" {
			complete = false
		}
		warnings = append(warnings, prefix+withStart(pp.Warning(), start))
	}
	if len(unreconcilable) > 0 {
		return admission.Denied(fmt.Sprintf("%s cannot be applied in place (nodes would have to be reprovisioned): %s", object, strings.Join(unreconcilable, "; "))), complete
	}
	return admission.Allowed("").WithWarnings(warnings...), complete
}

func noPreview(err error) admission.Response {
	return admission.Allowed("").WithWarnings("ndp: no preview: " + err.Error())
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
