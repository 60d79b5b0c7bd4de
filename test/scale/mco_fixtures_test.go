//go:build scale

package scale

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// realRendered is one real rendered MachineConfig of
// ../shared/mco-ref/realconfigs: the object as `oc get mc` dumped it, and
// the role (master or worker) it was rendered for.
type realRendered struct {
	name, role string
	obj        map[string]any
}

// loadRealRendered reads every rendered-*.yaml under dir, sorted by path
// so that the variations built from them are the same in every run.
func loadRealRendered(dir string) ([]realRendered, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*", "rendered-*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var out []realRendered
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var obj map[string]any
		if err := yaml.Unmarshal(b, &obj); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		base := strings.TrimSuffix(filepath.Base(p), ".yaml")
		role := strings.Split(strings.TrimPrefix(base, "rendered-"), "-")[0]
		if role != "master" && role != "worker" {
			return nil, fmt.Errorf("%s: want rendered-master-* or rendered-worker-*", p)
		}
		if _, ok, _ := unstructured.NestedMap(obj, "spec", "config"); !ok {
			return nil, fmt.Errorf("%s: no spec.config", p)
		}
		out = append(out, realRendered{name: p, role: role, obj: obj})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no rendered-*.yaml under %s", dir)
	}
	return out, nil
}

// variant is the i-th of n rendered MachineConfigs built from the real ones
// for pool (whose nodes run role's configs): a real rendered config of that
// role with one file of its own (so that no two are alike) and, for one in
// ten of each pool's (i/5 a multiple of ten), a large CA bundle as clusters
// with a corporate trust store carry, growing the object to between 300 KB
// and 1.2 MB across the run (grownSize). Its name
// is rendered-<pool>-<digest of its spec>, as the MCO names them.
func variant(real []realRendered, i, n int, pool, role string, poolUID string) (*unstructured.Unstructured, error) {
	var same []realRendered
	for _, r := range real {
		if r.role == role {
			same = append(same, r)
		}
	}
	src := same[i%len(same)]
	obj, err := deepCopyJSON(src.obj)
	if err != nil {
		return nil, err
	}
	spec := obj["spec"].(map[string]any)
	cfg := spec["config"].(map[string]any)
	storage, _ := cfg["storage"].(map[string]any)
	if storage == nil {
		storage = map[string]any{}
		cfg["storage"] = storage
	}
	files, _ := storage["files"].([]any)
	files = append(files, map[string]any{
		"path": "/etc/ndp-scale/variant.conf", "mode": 420, "overwrite": true,
		"contents": map[string]any{"source": "data:," + url.PathEscape(fmt.Sprintf("# rendered variant %d of %s\nvariant=%d\n", i, filepath.Base(src.name), i))},
	})
	storage["files"] = files
	if grown := grownSize(i, n); grown > 0 {
		cur, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		if pad := grown - len(cur); pad > 0 {
			// base64 of the PEM text: 4 bytes per 3.
			storage["files"] = append(files, map[string]any{
				"path": fmt.Sprintf("/etc/pki/ca-trust/source/anchors/corporate-%03d.pem", i), "mode": 420, "overwrite": true,
				"contents": map[string]any{"source": "data:;base64," + base64.StdEncoding.EncodeToString(pemBundle(uint64(i), pad*3/4))},
			})
		}
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(append([]byte(pool+"\x00"), raw...))
	name := fmt.Sprintf("rendered-%s-%s", pool, hex.EncodeToString(sum[:16]))
	meta := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	obj["metadata"] = map[string]any{
		"name":        name,
		"annotations": ann,
		// The render controller owns its rendered configs.
		"ownerReferences": []any{map[string]any{
			"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
			"name": pool, "uid": poolUID, "controller": true, "blockOwnerDeletion": true,
		}},
	}
	obj["apiVersion"], obj["kind"] = "machineconfiguration.openshift.io/v1", "MachineConfig"
	return &unstructured.Unstructured{Object: obj}, nil
}

// grownSize is the size of the i-th of n variants when it carries a CA
// bundle, else 0: sizes spread evenly over 300 KB..1.2 MB of JSON, ten per
// pool of five pools for 500 variants.
func grownSize(i, n int) int {
	step := i / 5
	if step%10 != 0 {
		return 0
	}
	return 300_000 + 900_000*(step/10)/max(1, n/50-1)
}

// pemBundle is about size bytes of PEM certificates, random but the same
// for the same seed: a trust store does not compress.
func pemBundle(seed uint64, size int) []byte {
	rng := rand.New(rand.NewPCG(seed, 0x5ca1e))
	var b strings.Builder
	body := make([]byte, 1152)
	for b.Len() < size {
		for k := range body {
			body[k] = byte(rng.Uint32())
		}
		enc := base64.StdEncoding.EncodeToString(body)
		b.WriteString("-----BEGIN CERTIFICATE-----\n")
		for len(enc) > 64 {
			b.WriteString(enc[:64] + "\n")
			enc = enc[64:]
		}
		b.WriteString(enc + "\n-----END CERTIFICATE-----\n")
	}
	return []byte(b.String()[:size])
}

func deepCopyJSON(in map[string]any) (map[string]any, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, json.Unmarshal(b, &out)
}

// createAll creates the objects with a few clients at once.
func createAll(ctx context.Context, c client.Client, objs []client.Object, workers int) error {
	ch := make(chan client.Object)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range ch {
				if err := c.Create(ctx, o); err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("creating %s: %w", o.GetName(), err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, o := range objs {
		ch <- o
	}
	close(ch)
	wg.Wait()
	return first
}
