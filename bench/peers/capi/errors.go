package main

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// machineHealthCheckController is the MachineHealthCheck controller's name
// in its logs and metrics.
const machineHealthCheckController = "machinehealthcheck"

// reconcilerError is the message controller-runtime logs a reconcile's
// error with.
const reconcilerError = "Reconciler error"

// errorCounter counts the "Reconciler error" lines logged through its
// loggers, by controller and, for the MachineHealthCheck controller, by
// kind.
type errorCounter struct {
	mu       sync.Mutex
	mhc      int
	kinds    map[string]int
	byObject map[string]int
	other    map[string]int
	// successes, if not nil (trackSuccesses), holds when each
	// MachineHealthCheck's and Machine's last successful reconcile ended
	// (-chaos); listed holds the reconciles in flight (by reconcileID) that
	// listed Nodes through a cluster's client (listedNodes).
	successes map[string]time.Time
	listed    map[string]bool
}

// reconcileSuccessful is what controller-runtime logs, at verbosity
// successVerbosity, after a reconcile that returned no error.
const (
	reconcileSuccessful = "Reconcile successful"
	successVerbosity    = 5
	// reconcileDone begins the message of a reconcile requeued without an
	// error, at the same verbosity.
	reconcileDone = "Reconcile done"
)

// trackSuccesses makes c keep when each MachineHealthCheck's and
// Machine's last successful reconcile ended (see successesSince).
func (c *errorCounter) trackSuccesses() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.successes, c.listed = map[string]time.Time{}, map[string]bool{}
}

// tracking reports whether c tracks successes.
func (c *errorCounter) tracking() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.successes != nil
}

// listedNodes records that reconcile id listed Nodes through a cluster's
// client (the Machine reconciler's read of a Machine's Node).
func (c *errorCounter) listedNodes(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.listed != nil && id != "" {
		c.listed[id] = true
	}
}

// ended records the end of reconcile id of object by controller, a
// success or not. A MachineHealthCheck's success counts; a Machine's only
// if that reconcile listed Nodes through the cluster's client (a reconcile
// that only adds the finalizer or the Paused condition reads nothing
// there).
func (c *errorCounter) ended(controller, object, id string, success bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	listed := c.listed[id]
	delete(c.listed, id)
	counts := controller == machineHealthCheckController || (controller == machineController && listed)
	if success && counts && object != "" && c.successes != nil {
		c.successes[object] = time.Now()
	}
}

// successesSince returns, by MachineHealthCheck or Machine name, the last
// successful reconcile of those reconciled successfully after since.
func (c *errorCounter) successesSince(since time.Time) map[string]time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]time.Time{}
	for k, t := range c.successes {
		if t.After(since) {
			out[k] = t
		}
	}
	return out
}

func newErrorCounter() *errorCounter {
	return &errorCounter{kinds: map[string]int{}, byObject: map[string]int{}, other: map[string]int{}}
}

// logger is a logger that counts into c and logs through to.
func (c *errorCounter) logger(to logr.Logger) logr.Logger {
	return logr.New(&countingSink{LogSink: to.GetSink(), c: c})
}

// errorCounts are what an errorCounter counted.
type errorCounts struct {
	// MHC counts the MachineHealthCheck controller's errors, by kind and
	// by MachineHealthCheck name.
	MHC      int
	Kinds    map[string]int
	ByObject map[string]int
	// Other counts the other controllers' errors, by controller.
	Other map[string]int
}

// counts returns what c counted so far.
func (c *errorCounter) counts() errorCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return errorCounts{MHC: c.mhc, Kinds: maps.Clone(c.kinds), ByObject: maps.Clone(c.byObject), Other: maps.Clone(c.other)}
}

func (c *errorCounter) add(controller, object string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if controller != machineHealthCheckController {
		c.other[controller]++
		return
	}
	c.mhc++
	c.kinds[kind(err)]++
	c.byObject[object]++
}

// names are what kind takes out of error messages: Cluster, Machine and
// Node names, addresses and numbers.
var names = regexp.MustCompile(`[0-9]+`)

// kind names an error: "ErrClusterNotConnected" for those matching Cluster
// API's sentinel (what GetClient returns while a cluster is not
// connected, in both caches), else its message with numbers replaced by
// "N" and cut at 160 bytes.
func kind(err error) string {
	if errors.Is(err, clustercache.ErrClusterNotConnected) {
		return "ErrClusterNotConnected"
	}
	if err == nil {
		return "<nil>"
	}
	msg := names.ReplaceAllString(err.Error(), "N")
	if len(msg) > 160 {
		msg = msg[:160] + "…"
	}
	return msg
}

// countingSink counts Error calls with reconcilerError, by the
// "controller" and object (objectKeys) values the logger carries, records
// the ends of reconciles (by their "reconcileID"), and passes every call
// on.
type countingSink struct {
	logr.LogSink
	c                       *errorCounter
	controller, object, rid string
}

func (s *countingSink) Init(info logr.RuntimeInfo) {
	if s.LogSink != nil {
		s.LogSink.Init(info)
	}
}

func (s *countingSink) Enabled(level int) bool {
	return s.passes(level) || (level == successVerbosity && s.c.tracking())
}

// passes reports whether the sink passes calls at level on.
func (s *countingSink) passes(level int) bool {
	return s.LogSink != nil && s.LogSink.Enabled(level)
}

func (s *countingSink) Info(level int, msg string, kv ...any) {
	if level == successVerbosity && (msg == reconcileSuccessful || strings.HasPrefix(msg, reconcileDone)) {
		n := s.with(kv)
		s.c.ended(n.controller, objectName(n.object), n.rid, msg == reconcileSuccessful)
	}
	if s.passes(level) {
		s.LogSink.Info(level, msg, kv...)
	}
}

func (s *countingSink) Error(err error, msg string, kv ...any) {
	if msg == reconcilerError {
		n := s.with(kv)
		s.c.add(n.controller, objectName(n.object), err)
		s.c.ended(n.controller, objectName(n.object), n.rid, false)
	}
	if s.LogSink != nil {
		s.LogSink.Error(err, msg, kv...)
	}
}

// with is s with the controller, object and reconcileID of kv.
func (s *countingSink) with(kv []any) *countingSink {
	n := *s
	n.controller = valueOf("controller", s.controller, kv)
	n.object = valueOf(objectKeys[n.controller], s.object, kv)
	n.rid = valueOf("reconcileID", s.rid, kv)
	return &n
}

func (s *countingSink) WithValues(kv ...any) logr.LogSink {
	n := s.with(kv)
	if s.LogSink != nil {
		n.LogSink = s.LogSink.WithValues(kv...)
	}
	return n
}

func (s *countingSink) WithName(name string) logr.LogSink {
	n := *s
	if s.LogSink != nil {
		n.LogSink = s.LogSink.WithName(name)
	}
	return &n
}

// objectKey is the key under which controller-runtime logs the
// reconciled MachineHealthCheck (its kind; a klog.ObjectRef, "ns/name");
// objectKeys are those of the reconciled object, by controller.
const objectKey = "MachineHealthCheck"

var objectKeys = map[string]string{machineHealthCheckController: objectKey, machineController: machineKey}

// valueOf is the last value of key in kv, as a string, or def.
func valueOf(key, def string, kv []any) string {
	for i := 0; i+1 < len(kv); i += 2 {
		if k, ok := kv[i].(string); ok && k == key {
			def = fmt.Sprint(kv[i+1])
		}
	}
	return def
}

// objectName is the name of a "ns/name" reference.
func objectName(ref string) string {
	return ref[strings.LastIndex(ref, "/")+1:]
}

// reconcileTotals reads controller_runtime_reconcile_total of controller
// from controller-runtime's registry, by result.
func reconcileTotals(controller string) (map[string]int, error) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return nil, fmt.Errorf("gathering metrics: %w", err)
	}
	out := map[string]int{}
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["controller"] == controller {
				out[labels["result"]] += int(m.GetCounter().GetValue())
			}
		}
	}
	return out, nil
}
