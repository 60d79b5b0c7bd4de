package webhook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// maxReplayBody bounds the bodies the replay path reads; larger ones go to
// the webhook, which enforces its own limit.
const maxReplayBody = 7 << 20

// bodies are reused request buffers: reviews of large MachineConfigs
// would otherwise be most of the garbage the server makes.
var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// bodyDigestKey carries, in a request's context, the digest of its
// AdmissionReview without the uid.
type bodyDigestKey struct{}

// replayHandler serves the MachineConfig preview. Decoding an
// AdmissionReview that carries a large MachineConfig is most of the cost of
// an answer the preview has already computed, so a review that differs
// from an answered one only in its uid (the API server's id of the
// request) is answered from the digest of its bytes, without decoding.
// Anything else goes to controller-runtime's webhook.
type replayHandler struct {
	preview *MachineConfigPreview
	webhook *admission.Webhook
}

func (h *replayHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody || r.Header.Get("Content-Type") != "application/json" {
		h.webhook.ServeHTTP(w, r)
		return
	}
	buf := bodies.Get().(*bytes.Buffer)
	defer func() { buf.Reset(); bodies.Put(buf) }()
	if r.ContentLength > 0 && r.ContentLength <= maxReplayBody {
		buf.Grow(int(r.ContentLength))
	}
	_, err := buf.ReadFrom(io.LimitReader(r.Body, maxReplayBody+1))
	_ = r.Body.Close()
	body := buf.Bytes()
	// The webhook copies what it reads: buf is reused after it returns.
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil || len(body) > maxReplayBody {
		h.webhook.ServeHTTP(w, r)
		return
	}
	uid, digest, ok := digestWithoutUID(body)
	if !ok {
		h.webhook.ServeHTTP(w, r)
		return
	}
	key := h.preview.state(digest)
	if a, hit := h.preview.answers.get(key); hit {
		resp := a.response()
		if err := resp.Complete(admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: uid}}); err == nil {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(admissionv1.AdmissionReview{
				TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
				Response: &resp.AdmissionResponse,
			})
			return
		}
	}
	h.webhook.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), bodyDigestKey{}, digest)))
}

// digestWithoutUID finds the uid of a v1 AdmissionReview, which the API
// server writes first in the request, and digests the review without it.
// It reads only the tokens before the uid; ok is false for any other
// layout, which then takes the decoding path.
func digestWithoutUID(body []byte) (uid types.UID, digest [sha256.Size]byte, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", digest, false
	}
	v1 := false
	for {
		k, err := dec.Token()
		key, isKey := k.(string)
		if err != nil || !isKey {
			return "", digest, false
		}
		if key != "request" {
			v, err := dec.Token()
			s, scalar := v.(string)
			if err != nil || !scalar {
				return "", digest, false
			}
			if key == "apiVersion" {
				v1 = s == admissionv1.SchemeGroupVersion.String()
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('{') || !v1 {
			return "", digest, false
		}
		if k, err := dec.Token(); err != nil || k != "uid" {
			return "", digest, false
		}
		start := dec.InputOffset()
		v, err := dec.Token()
		s, isString := v.(string)
		if err != nil || !isString {
			return "", digest, false
		}
		end := dec.InputOffset()
		h := sha256.New()
		h.Write(body[:start])
		h.Write(body[end:])
		h.Sum(digest[:0])
		return types.UID(s), digest, true
	}
}
