package testkit

import (
	"github.com/ndp-dev/ndp/internal/mcoref"
)

// MCORef is the directory of the Machine Config Operator's reference tools
// (mco-decide, mcc-ref, realconfigs: built from the MCO's own source): the
// directory $NDP_MCO_REF names, else shared/mco-ref beside the repository
// (../shared/mco-ref from its root, as CI has it); "" when there is none.
// Tests that compare ndp with the MCO skip, saying so, without it.
func MCORef() string { return mcoref.Dir() }
