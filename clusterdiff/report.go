package clusterdiff

// The report's JSON form (-o json, -o yaml) is documented in docs/diff.md:
// fields are added, never renamed or removed, within apiVersion
// ReportAPIVersion.

// ReportAPIVersion and ReportKind identify the JSON form.
const (
	ReportAPIVersion = "ndp.dev/v1alpha1"
	ReportKind       = "DiffReport"
)

// The modes a diff decides in.
const (
	// ModeMCO: an OpenShift cluster, whose Machine Config Operator renders
	// and updates the nodes (ndp advises); the MCO's plan is the one that
	// happens, ndp's is shown beside it.
	ModeMCO = "mco"
	// ModeNDP: ndp renders and its daemons execute ndp's plans.
	ModeNDP = "ndp"
)

// The operations of an object of the change set.
const (
	OpCreate    = "create"
	OpUpdate    = "update"
	OpDelete    = "delete"
	OpUnchanged = "unchanged" // applied, but equal to the cluster's
)

// The effects of a plan, least disruptive first.
const (
	EffectNone           = "none"
	EffectReload         = "reload"
	EffectRestart        = "restart"
	EffectDrain          = "drain"
	EffectReboot         = "reboot"
	EffectUnreconcilable = "unreconcilable"
)

// Report is what a change set does to every pool.
type Report struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Mode is ModeMCO or ModeNDP.
	Mode string `json:"mode"`
	// State says what the change set was applied to: "live cluster
	// https://…" or "snapshot DIR".
	State string `json:"state"`
	// Objects are the change set's objects and what applying each does.
	Objects []ObjectChange `json:"objects"`
	// Generated are the MachineConfigs the MCO's (or ndp's) controllers
	// would write, change or remove for the change set's KubeletConfigs,
	// ContainerRuntimeConfigs, image-mirror objects and image config.
	Generated []GeneratedChange `json:"generated,omitempty"`
	// Pools, sorted by name.
	Pools []PoolDiff `json:"pools"`
	// Changed: at least one pool would render a new config.
	Changed bool `json:"changed"`
	// Effect is the most disruptive effect of any group of nodes (an
	// Effect* constant), "none" when nothing changes.
	Effect string `json:"effect"`
	// Notes are what the reader should know about how the answer was
	// reached (a policy of the cluster not in force, a kind the state does
	// not hold).
	Notes []string `json:"notes,omitempty"`
}

// ObjectChange is one object of the change set.
type ObjectChange struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Operation string `json:"operation"`
	// Source is the file (and document) it was read from, or
	// "--delete" for a named deletion.
	Source string `json:"source"`
}

// GeneratedChange is a MachineConfig a controller writes for other
// objects.
type GeneratedChange struct {
	Name      string `json:"name"`
	Pool      string `json:"pool"`
	Operation string `json:"operation"`
	// Owners are the objects it is rendered from ("KubeletConfig
	// set-max-pods", "ImageDigestMirrorSet mirror-quay").
	Owners []string `json:"owners"`
}

// PoolDiff is what the change set does to one pool.
type PoolDiff struct {
	Pool string `json:"pool"`
	// From is the pool's rendered config today (spec.configuration.name),
	// To the one it would render; equal when Changed is false.
	From string `json:"from"`
	To   string `json:"to"`
	// ToExact: To is the name the MCO (or ndp) will give the new config.
	// False when the pool's MachineConfigs do not render to From today (a
	// cluster on another MCO version, or a render under way): the name may
	// then differ, and the plans start from today's rendering.
	ToExact bool `json:"toExact"`
	// Changed: the pool would render a new config.
	Changed bool `json:"changed"`
	// Causes are the change set's objects (and generated MachineConfigs,
	// named with their owners) that change the pool's sources.
	Causes []string `json:"causes,omitempty"`
	// Nodes is the number of nodes the pool manages (from its nodes, or
	// its status when the state has no nodes); NodesKnown tells which.
	Nodes      int  `json:"nodes"`
	NodesKnown bool `json:"nodesKnown"`
	// Groups are the pool's nodes by the config they run, each with its
	// plans, most nodes first; empty when nothing changes.
	Groups []Group `json:"groups,omitempty"`
	// Effect is the most disruptive effect among the groups.
	Effect string `json:"effect"`
	// Rollout is what the pool's RolloutPolicies would do with the update.
	Rollout *Rollout `json:"rollout,omitempty"`
	// Error, when set, is why the pool could not be rendered or planned
	// (the MCO's render controller would refuse the change: the pool goes
	// Degraded).
	Error string `json:"error,omitempty"`
}

// Group is the nodes of a pool that run one config, and their plans.
type Group struct {
	From  string   `json:"from"`
	Nodes int      `json:"nodes"`
	Names []string `json:"names,omitempty"`
	// Plan is what happens: the MCO's decision on OpenShift, ndp's plan
	// elsewhere.
	Plan Plan `json:"plan"`
	// NDP is ndp's own plan beside the MCO's (ModeMCO only).
	NDP *Plan `json:"ndp,omitempty"`
	// Entries are the nodeDisruptionPolicy entries of MachineConfiguration
	// cluster that would make the MCO do ndp's plan (ModeMCO, when ndp's is
	// less disruptive), as `ndp-controller --mco-entries=all` writes them;
	// EntriesExact tells whether the MCO then does exactly ndp's plan.
	Entries      []MCOEntry `json:"entries,omitempty"`
	EntriesExact bool       `json:"entriesExact,omitempty"`
}

// Plan is one plan: its effect, actions and why.
type Plan struct {
	// By is who decides: "MCO" or "ndp".
	By      string   `json:"by"`
	Effect  string   `json:"effect"`
	Actions []string `json:"actions"`
	Drain   bool     `json:"drain"`
	Reboot  bool     `json:"reboot"`
	// Refused lists why no node can apply the change in place.
	Refused []string `json:"refused,omitempty"`
	Changes []Change `json:"changes"`
}

// Change is one change of the rendered config, the rule or policy that
// decided it, and the objects behind it.
type Change struct {
	// Change as the plan names it ("file /etc/chrony.conf", "osImageURL").
	Change string `json:"change"`
	// Rule is the MCO's rule or ndp's policy that decided it.
	Rule    string   `json:"rule"`
	Actions []string `json:"actions"`
	// Objects say where it comes from: the MachineConfig, after the
	// objects a generated one is rendered from ("KubeletConfig max-pods →
	// MachineConfig 99-worker-generated-kubelet").
	Objects []string `json:"objects,omitempty"`
}

// MCOEntry is one nodeDisruptionPolicy entry: its subject ("file
// /etc/chrony.conf", "unit crio.service", "sshkey") and its actions.
type MCOEntry struct {
	Subject string   `json:"subject"`
	Actions []string `json:"actions"`
}

// Rollout is how a pool's update rolls out: the pool's own pacing and,
// with ndp (ModeNDP), the RolloutPolicies that select it.
type Rollout struct {
	// Pacing is the pool's budget of nodes updating at once.
	Pacing string `json:"pacing,omitempty"`
	// Policies are the RolloutPolicies that select the pool (ModeNDP).
	Policies []string `json:"policies,omitempty"`
	// Held, when set, says why the update would wait now: the pool is
	// paused, or a window is closed for its kind of disruption.
	Held string `json:"held,omitempty"`
	// Gates are the gates each step waits on (alerts, pacing, a budget).
	Gates []string `json:"gates,omitempty"`
}
