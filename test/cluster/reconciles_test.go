package cluster

// A barrier for "nothing happened": a controller of the suite's replica
// has reconciled an object since a point in time. controller-runtime logs
// each reconcile it begins and ends (at V(5), with the controller's name
// and the object's); the suite's replica logs through reconciles, which
// counts them.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ndp-dev/ndp/internal/testkit"
)

// reconciles counts the suite's replica's reconciles (startReplica logs
// through it), and replicaCache is that replica's cache.
var (
	reconciles   = &reconcileLog{counts: map[reconcileKey]reconcileCount{}}
	replicaCache cache.Cache
)

type reconcileKey struct{ controller, name string }

// reconcileCount numbers the reconciles of one object by one controller
// as they begin; lastEnded is the number of the last that ended (a
// controller reconciles an object once at a time).
type reconcileCount struct{ began, lastEnded int }

type reconcileLog struct {
	mu     sync.Mutex
	counts map[reconcileKey]reconcileCount
}

func (l *reconcileLog) count(k reconcileKey) reconcileCount {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[k]
}

func (l *reconcileLog) note(k reconcileKey, began bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.counts[k]
	if began {
		c.began++
	} else {
		c.lastEnded = c.began
	}
	l.counts[k] = c
}

// logger logs to base and counts the reconciles logged.
func (l *reconcileLog) logger(base logr.Logger) logr.Logger {
	return logr.New(&reconcileSink{inner: base.WithCallDepth(1).GetSink(), log: l})
}

// reconcileSink passes everything on to inner (as inner's level allows)
// and notes controller-runtime's lines for a reconcile begun and ended.
type reconcileSink struct {
	inner logr.LogSink
	log   *reconcileLog
	key   reconcileKey // the controller's name and the object's, once logged with
}

func (s *reconcileSink) Init(logr.RuntimeInfo) {} // inner was, by its own logger

// Enabled: every level, to see controller-runtime's V(5) lines.
func (s *reconcileSink) Enabled(int) bool { return true }

func (s *reconcileSink) Info(level int, msg string, kv ...any) {
	if s.key.controller != "" {
		switch {
		case msg == "Reconciling":
			s.log.note(s.key, true)
		case msg == "Reconcile successful", strings.HasPrefix(msg, "Reconcile done"):
			s.log.note(s.key, false)
		}
	}
	if s.inner.Enabled(level) {
		s.inner.Info(level, msg, kv...)
	}
}

func (s *reconcileSink) Error(err error, msg string, kv ...any) {
	if s.key.controller != "" && msg == "Reconciler error" {
		s.log.note(s.key, false)
	}
	s.inner.Error(err, msg, kv...)
}

func (s *reconcileSink) WithValues(kv ...any) logr.LogSink {
	k := s.key
	for i := 0; i+1 < len(kv); i += 2 {
		switch kv[i] {
		case "controller":
			k.controller, _ = kv[i+1].(string)
		case "name":
			k.name, _ = kv[i+1].(string)
		}
	}
	return &reconcileSink{inner: s.inner.WithValues(kv...), log: s.log, key: k}
}

func (s *reconcileSink) WithName(name string) logr.LogSink {
	return &reconcileSink{inner: s.inner.WithName(name), log: s.log, key: s.key}
}

// reconciledSince waits until each of controllers has reconciled the
// object named name since this call: it takes each one's count of
// reconciles begun, pokes (a write that wakes them all for the object:
// one more reconcile begins), and waits for a reconcile begun after the
// count to end. That one read everything the replica's cache held before
// this call (see cached and uncached), and decided.
func reconciledSince(t *testing.T, name string, poke func(), controllers ...string) {
	t.Helper()
	began := map[string]int{}
	for _, c := range controllers {
		began[c] = reconciles.count(reconcileKey{c, name}).began
	}
	poke()
	for _, c := range controllers {
		testkit.Eventually(t, fmt.Sprintf("the %s controller reconciles %s", c, name), func() (bool, string) {
			n := reconciles.count(reconcileKey{c, name})
			return n.lastEnded > began[c], fmt.Sprintf("%d begun (%d before the poke), the last ended: #%d", n.began, began[c], n.lastEnded)
		})
	}
}

// cached waits until the replica's cache holds obj as the API server last
// answered for it (its resourceVersion).
func cached(t *testing.T, obj client.Object) { t.Helper(); waitCache(t, obj, false) }

// uncached waits until the replica's cache no longer holds obj, deleted.
func uncached(t *testing.T, obj client.Object) { t.Helper(); waitCache(t, obj, true) }

func waitCache(t *testing.T, obj client.Object, gone bool) {
	t.Helper()
	want := obj.GetResourceVersion()
	testkit.Eventually(t, fmt.Sprintf("the replica's cache: %T %s at %s (deleted: %t)", obj, obj.GetName(), want, gone), func() (bool, string) {
		got := obj.DeepCopyObject().(client.Object)
		err := replicaCache.Get(context.Background(), client.ObjectKeyFromObject(obj), got)
		if gone {
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		}
		return err == nil && got.GetResourceVersion() == want, fmt.Sprintf("%s, %v", got.GetResourceVersion(), err)
	})
}
