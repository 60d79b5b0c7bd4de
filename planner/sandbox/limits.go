package sandbox

import (
	"errors"
)

// Errors an evaluation the sandbox stopped wraps (errors.Is).
var (
	ErrEvalMemory  = errors.New("evaluation stopped by the sandbox's memory limit")
	ErrEvalTimeout = errors.New("evaluation stopped by the sandbox's deadline")
)

// LimitError is a stop by the sandbox that names no policy.
type LimitError struct {
	msg  string
	kind error // ErrEvalMemory or ErrEvalTimeout
}

// NewLimitError is an error of kind (ErrEvalMemory or ErrEvalTimeout).
func NewLimitError(kind error, msg string) error { return &LimitError{kind: kind, msg: msg} }

func (e *LimitError) Error() string { return e.msg }
func (e *LimitError) Unwrap() error { return e.kind }
