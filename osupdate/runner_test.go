package osupdate

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// scripted is a Runner that answers each command from a script, in order
// for commands that repeat, and records every command line it was given.
type scripted struct {
	answers map[string][]answer
	calls   []string
}

type answer struct {
	out string
	err error
}

func (s *scripted) on(args string, out string, err error) *scripted {
	if s.answers == nil {
		s.answers = map[string][]answer{}
	}
	s.answers[args] = append(s.answers[args], answer{out, err})
	return s
}

func (s *scripted) Run(_ context.Context, c Command) ([]byte, error) {
	s.calls = append(s.calls, c.String())
	key := strings.Join(c.Args, " ")
	as := s.answers[key]
	if len(as) == 0 {
		return nil, fmt.Errorf("unexpected command %q", key)
	}
	a := as[0]
	if len(as) > 1 {
		s.answers[key] = as[1:]
	}
	return []byte(a.out), a.err
}

// wantError holds err to want: "" for none (fatal if there is one), else
// an error containing want. It says whether the case expected an error.
func wantError(t *testing.T, err error, want string) bool {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatal(err)
		}
		return false
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one with %q", err, want)
	}
	return true
}
