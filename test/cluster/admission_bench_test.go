package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/webhook"
)

// Admission load: 50 clients, each sending its next MachineConfig dry-run
// as soon as the previous one is answered, for NDP_ADMISSION_LOAD (20s)
// per mode.
const (
	admissionClients = 50
	admissionFiles   = 200
	admissionNodes   = 20
	admissionPool    = "adm"
)

var admissionSetup sync.Once

func admissionLoad() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("NDP_ADMISSION_LOAD")); err == nil && d > 0 {
		return d
	}
	return 20 * time.Second
}

// files are n files under /etc/adm, each with a small config file's
// worth of content; salt changes every file.
func files(n int, salt string) []builder.Entry {
	var fs []builder.Entry
	for i := range n {
		body := strings.Repeat(fmt.Sprintf("key%d = value-%s-%d\n", i, salt, i), 8)
		fs = append(fs, builder.File(fmt.Sprintf("/etc/adm/file-%03d.conf", i), body).With("mode", 420))
	}
	return fs
}

// setupAdmissionBench makes a pool whose base MachineConfig has 200 files,
// with 20 nodes on its rendered config.
func setupAdmissionBench(b *testing.B) {
	ctx := context.Background()
	benchMust(b, k8s.Create(ctx, machineConfigPool(admissionPool)))
	benchMust(b, k8s.Create(ctx, sourceMC("00-adm-base", admissionPool).WithFiles(files(admissionFiles, "base")...).Build()))
	var target string
	testkit.Until(b, "the pool renders its base and registries configs", func() bool {
		var p mcfgv1.MachineConfigPool
		if k8s.Get(ctx, client.ObjectKey{Name: admissionPool}, &p) != nil || len(p.Spec.Configuration.Source) != 2 {
			return false
		}
		target = p.Spec.Configuration.Name
		return true
	})
	for i := range admissionNodes {
		benchMust(b, k8s.Create(ctx, node(fmt.Sprintf("adm-%02d", i), admissionPool, target)))
	}
	testkit.Until(b, "a policy set is active", func() bool { return active.Planner() != nil })
}

// candidate is the MachineConfig the clients dry-run: the 200 files of the
// base, changed.
func candidate(b *testing.B, salt string) *ndpmcv1.MachineConfig {
	mc := sourceMC("50-adm-candidate", admissionPool).WithFiles(files(admissionFiles, salt)...).Build()
	mc.TypeMeta = metav1.TypeMeta{APIVersion: ndpmcv1.GroupVersion.String(), Kind: "MachineConfig"}
	return mc
}

// smallCandidate is a typical small MachineConfig: 1 to 3 files of its
// own (n picks how many), whose contents salt changes.
func smallCandidate(b *testing.B, n int, salt string) *ndpmcv1.MachineConfig {
	mcb := sourceMC("60-adm-small", admissionPool)
	for i := range n%3 + 1 {
		body := fmt.Sprintf("# managed by 60-adm-small\nserver ntp-%d.example.com iburst\nsalt %s\n", i, salt)
		mcb.WithFiles(builder.File(fmt.Sprintf("/etc/adm-small/file-%d.conf", i), body).With("mode", 420))
	}
	mc := mcb.Build()
	mc.TypeMeta = metav1.TypeMeta{APIVersion: ndpmcv1.GroupVersion.String(), Kind: "MachineConfig"}
	return mc
}

// noopWebhook serves, until stop, a validating webhook that allows
// everything (admission.Allowed("")) the way ndp's is served: a
// controller-runtime webhook server with the same options and certificate,
// on a port of its own. It is the framework's floor for the same reviews.
func noopWebhook(b *testing.B) (url string, stop func()) {
	l, err := net.Listen("tcp", net.JoinHostPort(webhookInstall.LocalServingHost, "0"))
	benchMust(b, err)
	port := l.Addr().(*net.TCPAddr).Port
	benchMust(b, l.Close())
	srv := ctrlwebhook.NewServer(ctrlwebhook.Options{
		Host: webhookInstall.LocalServingHost, Port: port, CertDir: webhookInstall.LocalServingCertDir,
	})
	srv.Register("/noop", &admission.Webhook{Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		return admission.Allowed("")
	})})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	deadline := time.Now().Add(time.Minute)
	for srv.StartedChecker()(nil) != nil {
		if time.Now().After(deadline) {
			b.Fatal("the no-op webhook server did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Sprintf("https://%s/noop", net.JoinHostPort(webhookInstall.LocalServingHost, strconv.Itoa(port))), func() {
		cancel()
		if err := <-done; err != nil {
			b.Logf("no-op webhook server: %v", err)
		}
	}
}

// reportRatio reports ndp's latency over the no-op webhook's, for the same
// load.
func reportRatio(b *testing.B, ndp, noop loadStats) {
	if ndp.p50 > 0 && noop.p50 > 0 && noop.p99 > 0 {
		b.ReportMetric(ndp.p50/noop.p50, "ndp/noop-p50")
		b.ReportMetric(ndp.p99/noop.p99, "ndp/noop-p99")
	}
}

// BenchmarkAdmissionUnderLoad reports admission latency (p50, p99), errors
// and throughput for MachineConfig dry-runs of 200-file configs:
//   - webhook: AdmissionReviews posted to the webhook server over loopback
//     TLS, as the API server sends them (the admission step alone);
//   - apiserver: `kubectl apply --dry-run=server` equivalents through the
//     real kube-apiserver (schema validation, the webhook call, dry-run
//     storage), the latency an administrator sees;
//   - webhook-distinct: every request a different config, so no rendering
//     or plan is reused (the cost of a first preview);
//   - webhook-1-client, apiserver-1-client: one client, no queueing;
//   - noop, noop-1-client: the same reviews, clients and TLS to a
//     controller-runtime webhook server whose handler only allows (the
//     framework's floor), with ndp's webhook latency over it (ndp/noop-p50,
//     ndp/noop-p99; the webhook mode run with the same load just before);
//   - webhook-small-cold: one client previewing a typical small
//     MachineConfig (1-3 files of its own) in the 200-file pool, its
//     contents different every time, so no rendering, plan or answer is
//     reused.
//
// A response counts as an error unless it allows the request with the
// pool's preview warning.
func BenchmarkAdmissionUnderLoad(b *testing.B) {
	admissionSetup.Do(func() { setupAdmissionBench(b) })
	same := candidate(b, "changed")
	// The API server gives every review, and every object created, its own uid.
	sameBodies := make([][]byte, 64)
	for i := range sameBodies {
		sameBodies[i] = admissionReview(b, same)
	}
	hc := webhookClient(b)
	url := fmt.Sprintf("https://%s/%s", net.JoinHostPort(webhookInstall.LocalServingHost, strconv.Itoa(webhookInstall.LocalServingPort)), strings.TrimPrefix(webhook.MachineConfigPath, "/"))

	var n atomic.Int64
	toWebhook := func(context.Context) error {
		return postReview(hc, url, sameBodies[n.Add(1)%int64(len(sameBodies))], "pool "+admissionPool+", ")
	}
	c := dryRunClient(b)
	throughAPIServer := func(ctx context.Context) error {
		var previews atomic.Int64
		if err := c.Create(context.WithValue(ctx, previewsKey{}, &previews), same.DeepCopy(), client.DryRunAll); err != nil {
			return err
		}
		if previews.Load() == 0 {
			return fmt.Errorf("no preview warning")
		}
		return nil
	}
	noopURL, stopNoop := noopWebhook(b)
	defer stopNoop()
	toNoop := func(context.Context) error {
		return postReview(hc, noopURL, sameBodies[n.Add(1)%int64(len(sameBodies))], "")
	}
	var ndp50, ndp1 loadStats
	b.Run("webhook", func(b *testing.B) { ndp50 = runLoad(b, admissionClients, toWebhook) })
	b.Run("noop", func(b *testing.B) { reportRatio(b, ndp50, runLoad(b, admissionClients, toNoop)) })
	b.Run("apiserver", func(b *testing.B) {
		before := apiserverWebhookLatency(b)
		defer func() {
			// The API server's own measure of the webhook call, for the
			// same requests: its part of what the administrator waits for.
			after := apiserverWebhookLatency(b)
			if n := after.count - before.count; n > 0 {
				b.ReportMetric(1000*(after.sum-before.sum)/float64(n), "webhook-mean-ms")
				b.ReportMetric(1000*after.quantileSince(before, 0.99), "webhook-p99≤ms")
			}
		}()
		runLoad(b, admissionClients, throughAPIServer)
	})
	b.Run("webhook-distinct", func(b *testing.B) {
		var n atomic.Int64
		runLoad(b, admissionClients, func(context.Context) error {
			body := admissionReview(b, candidate(b, fmt.Sprint("distinct-", n.Add(1))))
			return postReview(hc, url, body, "pool "+admissionPool+", ")
		})
	})
	// One administrator at a time: the latency without queueing.
	b.Run("webhook-1-client", func(b *testing.B) { ndp1 = runLoad(b, 1, toWebhook) })
	b.Run("noop-1-client", func(b *testing.B) { reportRatio(b, ndp1, runLoad(b, 1, toNoop)) })
	b.Run("apiserver-1-client", func(b *testing.B) { runLoad(b, 1, throughAPIServer) })
	b.Run("webhook-small-cold", func(b *testing.B) {
		var n atomic.Int64
		runLoad(b, 1, func(context.Context) error {
			i := n.Add(1)
			body := admissionReview(b, smallCandidate(b, int(i), fmt.Sprint("cold-", i)))
			return postReview(hc, url, body, "pool "+admissionPool+", ")
		})
	})
}

// loadStats are a load run's latency percentiles, in milliseconds.
type loadStats struct{ p50, p99 float64 }

// runLoad runs clients loops of send for the load duration and reports
// the latency percentiles, errors and throughput; it returns the last
// run's percentiles.
func runLoad(b *testing.B, clients int, send func(context.Context) error) loadStats {
	ctx := context.Background()
	var stats loadStats
	d := admissionLoad()
	for range b.N {
		var mu sync.Mutex
		var latencies []time.Duration
		var errs atomic.Int64
		var firstErr atomic.Value
		deadline := time.Now().Add(d)
		var wg sync.WaitGroup
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []time.Duration
				for time.Now().Before(deadline) {
					start := time.Now()
					err := send(ctx)
					mine = append(mine, time.Since(start))
					if err != nil {
						errs.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
					}
				}
				mu.Lock()
				latencies = append(latencies, mine...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
		pct := func(p float64) float64 {
			return float64(latencies[int(p*float64(len(latencies)-1))].Microseconds()) / 1000
		}
		b.ReportMetric(0, "ns/op")
		b.ReportMetric(pct(0.50), "p50-ms")
		b.ReportMetric(pct(0.99), "p99-ms")
		b.ReportMetric(float64(errs.Load()), "errors")
		b.ReportMetric(float64(len(latencies))/d.Seconds(), "req/s")
		if e, ok := firstErr.Load().(string); ok {
			b.Logf("first error: %s", e)
		}
		stats = loadStats{p50: pct(0.50), p99: pct(0.99)}
	}
	return stats
}

func admissionReview(b *testing.B, mc *ndpmcv1.MachineConfig) []byte {
	// The API server fills these in before calling admission.
	mc = mc.DeepCopy()
	mc.UID = types.UID(uuid.NewString())
	mc.CreationTimestamp = metav1.Now()
	raw, err := json.Marshal(mc)
	benchMust(b, err)
	dry := true
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID(uuid.NewString()),
			Kind:      metav1.GroupVersionKind{Group: ndpmcv1.GroupVersion.Group, Version: "v1", Kind: "MachineConfig"},
			Resource:  metav1.GroupVersionResource{Group: ndpmcv1.GroupVersion.Group, Version: "v1", Resource: "machineconfigs"},
			Name:      mc.Name,
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: raw},
			DryRun:    &dry,
		}})
	benchMust(b, err)
	return body
}

func webhookClient(b *testing.B) *http.Client {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(webhookInstall.LocalServingCAData) {
		b.Fatal("the webhook CA does not parse")
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		MaxIdleConnsPerHost: admissionClients,
	}}
}

// postReview sends one AdmissionReview; an answer that does not allow the
// request with a warning starting with expect (or, expect empty, that does
// not allow it) is an error.
func postReview(hc *http.Client, url string, body []byte, expect string) error {
	resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&review); err != nil {
		return fmt.Errorf("HTTP %d: %w", resp.StatusCode, err)
	}
	r := review.Response
	if r == nil || !r.Allowed || expect != "" && (len(r.Warnings) == 0 || !strings.HasPrefix(r.Warnings[0], expect)) {
		return fmt.Errorf("unexpected answer: %+v", r)
	}
	return nil
}

// previewsKey holds, in a request's context, the count of the pool's
// preview warnings its response carried.
type previewsKey struct{}

type warningCounter struct{}

func (warningCounter) HandleWarningHeaderWithContext(ctx context.Context, _ int, _ string, text string) {
	if n, ok := ctx.Value(previewsKey{}).(*atomic.Int64); ok && strings.HasPrefix(text, "pool "+admissionPool+", ") {
		n.Add(1)
	}
}

// dryRunClient is a client without client-side rate limiting, so that the
// load reaches the API server.
func dryRunClient(b *testing.B) client.Client {
	cfg := rest.CopyConfig(restConfig)
	cfg.QPS, cfg.Burst = -1, 0
	cfg.WarningHandlerWithContext = warningCounter{}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	benchMust(b, err)
	return c
}

// webhookLatency is the API server's histogram of calls to the
// MachineConfig preview webhook (apiserver_admission_webhook_admission_duration_seconds).
type webhookLatency struct {
	count   uint64
	sum     float64
	buckets map[float64]uint64 // upper bound (s) -> cumulative count
}

func apiserverWebhookLatency(b *testing.B) webhookLatency {
	cs, err := kubernetes.NewForConfig(restConfig)
	benchMust(b, err)
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	benchMust(b, err)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	benchMust(b, err)
	out := webhookLatency{buckets: map[float64]uint64{}}
	for _, m := range families["apiserver_admission_webhook_admission_duration_seconds"].GetMetric() {
		name := ""
		for _, l := range m.GetLabel() {
			if l.GetName() == "name" {
				name = l.GetValue()
			}
		}
		if name != "machineconfigs.preview.ndp.dev" {
			continue
		}
		h := m.GetHistogram()
		out.count += h.GetSampleCount()
		out.sum += h.GetSampleSum()
		for _, bk := range h.GetBucket() {
			out.buckets[bk.GetUpperBound()] += bk.GetCumulativeCount()
		}
	}
	return out
}

// quantileSince is the upper bound of the bucket holding quantile q of the
// calls made since before.
func (w webhookLatency) quantileSince(before webhookLatency, q float64) float64 {
	total := float64(w.count - before.count)
	bounds := make([]float64, 0, len(w.buckets))
	for ub := range w.buckets {
		bounds = append(bounds, ub)
	}
	sort.Float64s(bounds)
	for _, ub := range bounds {
		if float64(w.buckets[ub]-before.buckets[ub]) >= q*total {
			return ub
		}
	}
	return math.Inf(1)
}
