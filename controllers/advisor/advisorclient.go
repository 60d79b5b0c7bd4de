package advisor

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorv1 "github.com/openshift/api/operator/v1"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// The advisor writes only its own objects (docs/design.md#the-advisor):
// ndp.dev resources, Events and leader-election Leases. Beside the Machine
// Config Operator everything else it could reach — MachineConfigs, pools,
// Nodes, MachineConfigNodes, MachineConfiguration, ClusterOperators, any
// openshift/api CRD — belongs to the MCO or the cluster version operator.
// Its role grants no such write; AdvisorClient refuses them before a
// request is sent, so that a bug cannot write them even under a role that
// would let it (defence in depth).

// advisorWritable tells whether the advisor may write objects of gk.
func advisorWritable(gk schema.GroupKind) bool {
	switch {
	case gk.Group == v1alpha1.GroupVersion.Group:
		return true
	case gk.Kind == "Event" && (gk.Group == "" || gk.Group == "events.k8s.io"):
		return true
	case gk.Kind == "Lease" && gk.Group == "coordination.k8s.io":
		return true
	}
	return false
}

// AdvisorWriteError is a write AdvisorClient refused.
type AdvisorWriteError struct {
	// Verb is the write: "patch", "update status".
	Verb string
	// Kind, APIVersion and Name (namespace/name) say which object; Kind
	// is the Go type when the kind is not known.
	Kind, APIVersion, Name string
}

func (e *AdvisorWriteError) Error() string {
	return fmt.Sprintf("ndp runs as the advisor beside the Machine Config Operator and writes only ndp.dev objects, Events and Leases: %s of %s %s (%s) refused",
		e.Verb, e.Kind, e.Name, e.APIVersion)
}

// NewAdvisorClient is a client.NewClientFunc (ctrl.Options.NewClient): the
// manager's client, wrapped by AdvisorClient.
func NewAdvisorClient(cfg *rest.Config, opts client.Options) (client.Client, error) {
	c, err := client.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	return AdvisorClient(c), nil
}

// NewAdvisorClientWithMCOEntries is NewAdvisorClient that may also apply
// ndp's entries to MachineConfiguration cluster (--mco-entries): a
// server-side apply of that one object, never an update, a plain patch or
// a delete, and of no other MachineConfiguration.
func NewAdvisorClientWithMCOEntries(cfg *rest.Config, opts client.Options) (client.Client, error) {
	c, err := client.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	return &advisorClient{Client: c, mcoEntries: true}, nil
}

// AdvisorClient wraps c: every create, update, patch, apply, delete and
// subresource write (status included) of an object outside ndp.dev, Events
// and Leases fails with an *AdvisorWriteError and sends nothing. Reads
// pass.
func AdvisorClient(c client.Client) client.Client { return &advisorClient{Client: c} }

type advisorClient struct {
	client.Client
	// mcoEntries lets applies of MachineConfiguration cluster through.
	mcoEntries bool
}

// check refuses a write of obj unless the advisor may write its kind (an
// object whose kind is not known is refused).
func (c *advisorClient) check(verb string, obj runtime.Object) error {
	gvk, err := c.GroupVersionKindFor(obj)
	name := ""
	if o, ok := obj.(client.Object); ok {
		name = o.GetName()
		if ns := o.GetNamespace(); ns != "" {
			name = ns + "/" + name
		}
	}
	if err != nil {
		return &AdvisorWriteError{Verb: verb, Kind: fmt.Sprintf("%T", obj), Name: name}
	}
	if advisorWritable(gvk.GroupKind()) {
		return nil
	}
	return &AdvisorWriteError{Verb: verb, Kind: gvk.Kind, APIVersion: gvk.GroupVersion().String(), Name: name}
}

// applyKind reads an apply configuration's apiVersion and kind (the typed
// and unstructured ones carry them).
func applyKind(obj runtime.ApplyConfiguration) (schema.GroupVersionKind, string, bool) {
	type typed interface {
		GetAPIVersion() *string
		GetKind() *string
		GetName() *string
	}
	if t, ok := obj.(typed); ok && t.GetAPIVersion() != nil && t.GetKind() != nil {
		gv, err := schema.ParseGroupVersion(*t.GetAPIVersion())
		name := ""
		if t.GetName() != nil {
			name = *t.GetName()
		}
		return gv.WithKind(*t.GetKind()), name, err == nil
	}
	// client.ApplyConfigurationFromUnstructured: the unstructured object's
	// own getters.
	type unstructuredApply interface {
		GetAPIVersion() string
		GetKind() string
		GetName() string
	}
	if u, ok := obj.(unstructuredApply); ok && u.GetAPIVersion() != "" && u.GetKind() != "" {
		gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
		return gv.WithKind(u.GetKind()), u.GetName(), err == nil
	}
	return schema.GroupVersionKind{}, "", false
}

func (c *advisorClient) checkApply(verb string, obj runtime.ApplyConfiguration) error {
	gvk, name, ok := applyKind(obj)
	if !ok {
		return &AdvisorWriteError{Verb: verb, Kind: fmt.Sprintf("%T", obj), Name: name}
	}
	if advisorWritable(gvk.GroupKind()) {
		return nil
	}
	if c.mcoEntries && gvk.Group == operatorv1.GroupName && gvk.Kind == "MachineConfiguration" && name == MachineConfigurationName {
		return nil
	}
	return &AdvisorWriteError{Verb: verb, Kind: gvk.Kind, APIVersion: gvk.GroupVersion().String(), Name: name}
}

func (c *advisorClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := c.check("create", obj); err != nil {
		return err
	}
	return c.Client.Create(ctx, obj, opts...)
}

func (c *advisorClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := c.check("update", obj); err != nil {
		return err
	}
	return c.Client.Update(ctx, obj, opts...)
}

func (c *advisorClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if err := c.check("patch", obj); err != nil {
		return err
	}
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c *advisorClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	if err := c.checkApply("apply", obj); err != nil {
		return err
	}
	return c.Client.Apply(ctx, obj, opts...)
}

func (c *advisorClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if err := c.check("delete", obj); err != nil {
		return err
	}
	return c.Client.Delete(ctx, obj, opts...)
}

func (c *advisorClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	if err := c.check("deletecollection", obj); err != nil {
		return err
	}
	return c.Client.DeleteAllOf(ctx, obj, opts...)
}

func (c *advisorClient) Status() client.SubResourceWriter { return c.SubResource("status") }

func (c *advisorClient) SubResource(sub string) client.SubResourceClient {
	return &advisorSubResource{c: c, sub: sub, SubResourceClient: c.Client.SubResource(sub)}
}

// advisorSubResource checks subresource writes as the object's own; reads
// pass.
type advisorSubResource struct {
	c   *advisorClient
	sub string
	client.SubResourceClient
}

func (s *advisorSubResource) Create(ctx context.Context, obj client.Object, subResource client.Object, opts ...client.SubResourceCreateOption) error {
	if err := s.c.check("create "+s.sub, obj); err != nil {
		return err
	}
	return s.SubResourceClient.Create(ctx, obj, subResource, opts...)
}

func (s *advisorSubResource) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if err := s.c.check("update "+s.sub, obj); err != nil {
		return err
	}
	return s.SubResourceClient.Update(ctx, obj, opts...)
}

func (s *advisorSubResource) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if err := s.c.check("patch "+s.sub, obj); err != nil {
		return err
	}
	return s.SubResourceClient.Patch(ctx, obj, patch, opts...)
}

func (s *advisorSubResource) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	if err := s.c.checkApply("apply "+s.sub, obj); err != nil {
		return err
	}
	return s.SubResourceClient.Apply(ctx, obj, opts...)
}
