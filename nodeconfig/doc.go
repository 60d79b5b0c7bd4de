// Package nodeconfig holds the node's component configs as the Machine
// Config Operator renders them from KubeletConfigs and
// ContainerRuntimeConfigs (openshift/api machineconfiguration/v1):
// validation (the MCO's rules, strict decoding, the kubelet's checks that
// depend on the configuration alone), kubelet.conf merged over a base, the
// CRI-O drop-ins and storage.conf, and the names of the MachineConfigs the
// MCO generates for them (99-<pool>-generated-kubelet and
// 99-<pool>-generated-containerruntime, with the mc-name-suffix), with the
// MCO's names, merge and encoding (its pkg/controller/kubelet-config and
// pkg/controller/container-runtime-config).
//
// It is pure: the kubelet.conf and storage.conf a config is merged into are
// given by the caller (render.GeneratedBase reads them from the pool's other
// MachineConfigs), so the controllers and the admission webhook render the
// same bytes. It links no OPA.
package nodeconfig
