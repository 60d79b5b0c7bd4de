package policy

import "strings"

// Error says why a policy cannot be used, naming the policy, where it
// came from and, for Rego, the line and column.
type Error struct {
	Policy   string
	Origin   string
	Messages []string
	// Err, if set, is the kind of failure (ErrEvalMemory, ErrEvalTimeout).
	Err error
}

// Unwrap returns the kind of failure, if known.
func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	msg := strings.Join(e.Messages, "; ")
	if e.Origin != "" && strings.HasPrefix(msg, e.Origin) {
		return msg // a Rego position already names the file or object
	}
	return e.Origin + ": " + msg
}
