package preview

import (
	"context"
	"fmt"
	"net/http"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/nodeconfig"
	"github.com/ndp-dev/ndp/render"
)

// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=kubeletconfigs;containerruntimeconfigs,verbs=get;list;watch

// GeneratedConfigPreview previews a KubeletConfig or ContainerRuntimeConfig
// create, update or delete: for every pool the object selects (before or
// after), it renders the MachineConfig the KubeletConfig or
// ContainerRuntimeConfig controller would write (or removes it, for a pool
// no longer selected or a delete), and its mode's Answers previews the
// pools with it as a MachineConfig preview does, one warning per pool. A
// config the controller would refuse is its Answers' too (the executor
// denies it with the controller's message, naming the field).
type GeneratedConfigPreview struct {
	Previewer *Previewer
	Answers   Answers
	Decoder   admission.Decoder
	// Deadline bounds a preview (DefaultPreviewDeadline when zero).
	Deadline time.Duration
}

// generatedObject is the candidate and its kind's functions.
type generatedObject struct {
	kind     nodeconfig.Kind
	owner    nodeconfig.Owner
	validate func() error
	ignition func(pool string, mcs []*ndpmcv1.MachineConfig) ([]byte, error)
}

func (h *GeneratedConfigPreview) decode(req admission.Request, old bool) (*generatedObject, error) {
	raw := req.Object
	if old {
		raw = req.OldObject
	}
	switch req.Kind.Kind {
	case "KubeletConfig":
		var kc mcfgv1.KubeletConfig
		if err := h.Decoder.DecodeRaw(raw, &kc); err != nil {
			return nil, err
		}
		return &generatedObject{nodeconfig.KindKubelet, nodeconfig.OwnerOfKubeletConfig(&kc),
			func() error { return nodeconfig.ValidateKubeletConfig(&kc) },
			func(pool string, mcs []*ndpmcv1.MachineConfig) ([]byte, error) {
				return render.KubeletConfigIgnition(pool, mcs, &kc)
			}}, nil
	case "ContainerRuntimeConfig":
		var c mcfgv1.ContainerRuntimeConfig
		if err := h.Decoder.DecodeRaw(raw, &c); err != nil {
			return nil, err
		}
		return &generatedObject{nodeconfig.KindContainerRuntime, nodeconfig.OwnerOfContainerRuntimeConfig(&c),
			func() error { return nodeconfig.ValidateContainerRuntimeConfig(&c) },
			func(pool string, mcs []*ndpmcv1.MachineConfig) ([]byte, error) {
				return render.ContainerRuntimeConfigIgnition(pool, mcs, &c)
			}}, nil
	}
	return nil, nil
}

// owners lists the configs of kind in the cluster, with cand in place of
// the one of its name (or removed, when cand is nil).
func (h *GeneratedConfigPreview) owners(ctx context.Context, kind nodeconfig.Kind, name string, cand *nodeconfig.Owner) ([]nodeconfig.Owner, error) {
	var out []nodeconfig.Owner
	switch kind {
	case nodeconfig.KindKubelet:
		var l mcfgv1.KubeletConfigList
		if err := h.Previewer.Client.List(ctx, &l, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		for i := range l.Items {
			if l.Items[i].Name != name {
				out = append(out, nodeconfig.OwnerOfKubeletConfig(&l.Items[i]))
			}
		}
	default:
		var l mcfgv1.ContainerRuntimeConfigList
		if err := h.Previewer.Client.List(ctx, &l, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		for i := range l.Items {
			if l.Items[i].Name != name {
				out = append(out, nodeconfig.OwnerOfContainerRuntimeConfig(&l.Items[i]))
			}
		}
	}
	if cand != nil {
		out = append(out, *cand)
	}
	return out, nil
}

// Handle implements admission.Handler.
func (h *GeneratedConfigPreview) Handle(ctx context.Context, req admission.Request) admission.Response {
	ctx, cancel := context.WithTimeout(ctx, Deadline(h.Deadline))
	defer cancel()
	kind := req.Kind.Kind
	object := fmt.Sprintf("%s %q", kind, req.Name)
	var cand, old *generatedObject
	var err error
	if req.Operation != admissionv1.Delete {
		if cand, err = h.decode(req, false); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding %s: %w", object, err))
		}
		if cand == nil {
			return admission.Allowed("") // not a kind of this handler
		}
		// The controller's own check: what it would refuse is refused here.
		if err := cand.validate(); err != nil {
			return h.Answers.RefuseGenerated(kind, err.Error())
		}
	}
	if req.Operation != admissionv1.Create && len(req.OldObject.Raw) > 0 {
		if old, err = h.decode(req, true); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding %s: %w", object, err))
		}
	}
	if cand == nil && old == nil {
		return admission.Allowed("")
	}
	k := cand
	if k == nil {
		k = old
	}
	var candOwner *nodeconfig.Owner
	if cand != nil {
		o := cand.owner
		if old != nil && o.Annotations[nodeconfig.MCNameSuffixAnnotation] == "" {
			// An update keeps the name the controller gave it.
			if v, ok := old.owner.Annotations[nodeconfig.MCNameSuffixAnnotation]; ok {
				o.Annotations = map[string]string{nodeconfig.MCNameSuffixAnnotation: v}
			}
		}
		candOwner = &o
	}
	owners, err := h.owners(ctx, k.kind, req.Name, candOwner)
	if err != nil {
		return NoPreview(fmt.Errorf("listing %ss: %w", kind, err))
	}
	pools, err := h.Previewer.Pools(ctx)
	if err != nil {
		return NoPreview(err)
	}
	exists := func(name string) bool {
		var mc ndpmcv1.MachineConfig
		return h.Previewer.Client.Get(ctx, client.ObjectKey{Name: name}, &mc) == nil
	}
	prefix := fmt.Sprintf("%s %s %s: ", Verb(req.Operation), kind, req.Name)
	overrides := map[string]Overrides{}
	var selected []*mcfgv1.MachineConfigPool
	var warnings []string
	for _, pool := range pools {
		inNew, inOld := false, false
		if cand != nil {
			if inNew, err = nodeconfig.SelectsPool(cand.owner.Selector, pool); err != nil {
				return h.Answers.RefuseGenerated(kind, fmt.Sprintf("%s: %v", object, err))
			}
		}
		if old != nil {
			inOld, _ = nodeconfig.SelectsPool(old.owner.Selector, pool)
		}
		if !inNew && !inOld {
			continue
		}
		ov := Overrides{}
		if inOld {
			// What the config renders to today, removed (and replaced below).
			name, err := nodeconfig.ManagedName(k.kind, pool, old.owner, append(owners, old.owner), exists)
			if err == nil {
				ov[name] = nil
			}
		}
		if inNew {
			name, err := nodeconfig.ManagedName(k.kind, pool, *candOwner, owners, exists)
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("%sno preview for pool %s: %v", prefix, pool.Name, err))
				continue
			}
			mcs, err := h.Previewer.View(pool).Sources(ctx)
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("%sno preview for pool %s: %v", prefix, pool.Name, err))
				continue
			}
			ign, err := cand.ignition(pool.Name, mcs)
			if nodeconfig.IsInvalid(err) {
				return h.Answers.RefuseGenerated(kind, err.Error())
			}
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("%sno preview for pool %s: %v", prefix, pool.Name, err))
				continue
			}
			ov[name] = render.GeneratedMachineConfig(name, pool.Name, ign)
		}
		overrides[pool.Name] = ov
		selected = append(selected, pool)
	}
	if cand != nil && len(selected) == 0 && len(warnings) == 0 {
		return admission.Allowed("").WithWarnings(fmt.Sprintf("%s%s does not match any MachineConfigPools: nothing would be rendered", prefix, object))
	}
	return h.Answers.GeneratedPools(ctx, object, prefix, selected, func(pool *mcfgv1.MachineConfigPool) Overrides { return overrides[pool.Name] }, warnings)
}
