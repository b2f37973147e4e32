package kube

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Every decision about one workload cluster is taken by decide, a pure
// function of what is known of the cluster at that moment (its view), as
// the pool's entry.step is for the pool: no I/O, no clock (the time is in
// the view), no lock, no user code. Admission, SecretWatcher and Prober
// gather the view from their input, call decide, and carry out the action
// it returns; docs/design.md ("One path from an input to an action") draws
// that path. TestDecideTable lists every input in every state.

// input is what a decision is about.
type input uint8

const (
	// inObject: the Cluster object was reconciled (created, changed,
	// deleted, refused or admitted by Admit).
	inObject input = iota
	// inSecret: the cluster's kubeconfig Secret appeared or its kubeconfig
	// changed, or a dial during which it changed ended.
	inSecret
	// inTick: the probe schedule's tick of a connected cluster.
	inTick
	// inProbed: a GET /readyz the tick sent has answered.
	inProbed
	// inRevive: the revive schedule's tick of a cluster whose breaker
	// the pool's latest event said was open.
	inRevive
	// inRevived: the endpoint check that tick sent has answered.
	inRevived
)

// action is what the reconciler does about a cluster: one pool call, one
// credential swap, or one request.
type action uint8

const (
	// actNothing: nothing to do (requeueAfter may still be set).
	actNothing action = iota
	// actRemove: Pool.Remove. The object is gone or refused, or another
	// object (UID) replaced it under its name.
	actRemove
	// actConnect: Pool.Connect. The pool dials an idle cluster whose
	// breaker is closed; an open breaker keeps its backoff.
	actConnect
	// actRetry: Pool.Probe, then Pool.Connect when the caller connects:
	// new credentials for a cluster not connected, which an open breaker
	// may lack.
	actRetry
	// actRedial: Pool.Redial. The new credentials cannot be swapped in
	// place, or the apiserver refused the current ones (401).
	actRedial
	// actRotate: swap the connected client's credentials in place, read
	// from the changed Secret (the client's are older than its).
	actRotate
	// actRefresh: swap them in place, read afresh from the source: the
	// order of the client's credentials and the Secret's is unknown, and
	// a cluster never goes back to older credentials.
	actRefresh
	// actProbe: GET /readyz.
	actProbe
	// actReport: Pool.Report the probe's outcome.
	actReport
	// actCheck: check the endpoint of a cluster whose breaker is open, as
	// a dial's first step does (its credentials read as a dial reads them,
	// a connection of its own, TLS, GET /readyz), under a timeout of its
	// own; the cluster is not connected, so there is no client to ask.
	actCheck
)

var actionNames = [...]string{"nothing", "remove", "connect", "retry", "redial", "rotate", "refresh", "probe", "report",
	"check"}

func (a action) String() string { return actionNames[a] }

// view is what decide knows of one cluster. The fields an input does not
// read are left zero.
type view struct {
	in input

	// The Cluster object (inObject).
	present  bool      // it exists and Admit accepts it (also while it is deleted)
	uid      types.UID // its UID
	admitted types.UID // the UID admitted under its name before, "" if none
	connect  bool      // dial each admitted cluster, or each whose Secret appears

	// The pool's client.
	connected bool // the pool holds a client
	dialing   bool // a dial is in flight

	// The kubeconfig (inSecret).
	seen    string   // revision of the changed Secret
	before  []string // revisions the kubeconfig had before it, oldest first
	applied string   // revision the connected client uses, "" if unknown

	// The probe schedule (inTick) and its outcome (inProbed).
	probe schedule
	err   error // the probe's error (inProbed)
	// unauthorized: the probe's error is a 401 that newer credentials in
	// place did not cure.
	unauthorized bool

	// The breaker as the pool's latest event of the cluster told it, and
	// the revive schedule (inRevive, inRevived; present: admitted, and
	// dialing: its half-open probe is out).
	revive revival
}

// revival is the revive schedule of a cluster whose breaker is open.
type revival struct {
	open   bool          // the breaker is open: no probe out, callers rejected
	failed int           // checks failed since the cluster was last connected or removed
	every  time.Duration // ProberOptions.ReviveInterval
	jitter float64       // in [-1, 1): the next delay's share of ±reviveJitter
	// down is how long ago the cluster's client left the pool (negative:
	// not connected since the reconciler started, or removed since), and
	// window ProberOptions.ReviveWindow: a cluster is checked while
	// 0 <= down <= window, the evidence that it was alive a moment ago.
	down, window time.Duration
}

// recent reports whether the cluster was connected within the window.
func (r revival) recent() bool { return r.down >= 0 && r.down <= r.window }

// schedule is the probe schedule of a connected cluster: durations since
// its dial (the liveness's origin).
type schedule struct {
	wired   bool          // a Dialer built the client: its wire is evidence
	now     time.Duration // the time of the decision
	read    time.Duration // the last read of any of its connections
	readyz  time.Duration // the last GET /readyz's start (the dial's: 0)
	retry   time.Duration // after a failed GET /readyz: none before this
	suspect bool          // the last probe failed, or a connection was lost since
	http1   bool          // the last GET /readyz answered over HTTP/1: no PINGs
	phase   float64       // brings the first readyzEvery forward by this fraction

	interval    time.Duration // ProberOptions.Interval
	readyzEvery time.Duration // ProberOptions.ReadyzInterval
}

// decide returns what to do about the cluster of v, and after how long its
// next tick is due (0: none).
func decide(v view) (action, time.Duration) {
	switch v.in {
	case inObject:
		return decideObject(v)
	case inSecret:
		return decideSecret(v), 0
	case inTick:
		return decideTick(v)
	case inProbed:
		return decideProbed(v)
	case inRevive, inRevived:
		return decideRevive(v)
	}
	return actNothing, 0
}

// decideObject: a Cluster gone or refused leaves the pool; one of another
// UID than the one admitted under its name is a new cluster, the old one
// leaves first (the next decision, with admitted cleared, connects it).
// An admitted cluster not connected is connected.
func decideObject(v view) (action, time.Duration) {
	switch {
	case !v.present:
		return actRemove, 0
	case v.admitted != "" && v.admitted != v.uid:
		return actRemove, 0
	case v.connect && !v.connected:
		return actConnect, 0
	}
	return actNothing, 0
}

// decideSecret: a connected cluster's credentials follow the Secret,
// never back to older ones; another is retried, since an open breaker
// may lack just these credentials (a cluster dialing is retried too, in
// case its dial ends meanwhile, and the caller keeps the Secret for the
// dial's end: the dial may have read the older one).
func decideSecret(v view) action {
	switch {
	case v.connected && (v.applied == "" || v.applied == v.seen):
		return actNothing
	case v.connected && slices.Contains(v.before, v.applied):
		return actRotate
	case v.connected:
		return actRefresh
	}
	return actRetry
}

// decideTick: GET /readyz when the wire's evidence is stale (5/2
// interval old), the last GET /readyz readyzEvery old (the dial counts as
// the first, brought forward by the phase), or a suspect cluster's retry
// is due; else nothing until the earliest of those. A cluster whose wire
// is no evidence is probed at every tick.
func decideTick(v view) (action, time.Duration) {
	if !v.connected {
		return actNothing, 0
	}
	if !v.probe.wired {
		return actProbe, 0
	}
	if wait := v.probe.wait(); wait > 0 {
		return actNothing, wait
	}
	return actProbe, 0
}

// decideProbed: a 401 that newer credentials did not cure redials (the
// dial reads the credentials afresh); any other outcome is reported, and
// the next tick is due after an interval, or later if the wire answers.
func decideProbed(v view) (action, time.Duration) {
	if v.unauthorized {
		return actRedial, 0
	}
	if !v.probe.wired {
		return actReport, v.probe.interval
	}
	return actReport, max(v.probe.interval, v.probe.wait())
}

// wait returns how long the tick may wait before GET /readyz is due. A
// wire's silence is evidence only if it pings (HTTP/2): an HTTP/1 wire
// that only the probes read is quiet, not stale, and gets GET /readyz
// every readyzEvery as any quiet cluster does (docs/health.md).
func (s schedule) wait() time.Duration {
	if s.suspect {
		return max(s.retry-s.now, 0)
	}
	last := s.readyz
	if last == 0 { // the dial's
		last -= time.Duration(s.phase * float64(s.readyzEvery))
	}
	at := last + s.readyzEvery
	if !s.http1 {
		at = min(at, s.read+s.interval*5/2)
	}
	return max(at-s.now, 0)
}

// Revive's backoff: the first check ReviveInterval (R) after the breaker
// opens, then 2R after the first that failed, and reviveCap R after each
// later one: each delay ±reviveJitter of itself.
const (
	reviveCap    = 3
	reviveJitter = 0.2
)

// decideRevive: an admitted cluster that is not connected and whose
// breaker is open (no probe out), connected at most ReviveWindow ago, has
// its endpoint checked (inRevive); one never connected, or down for
// longer, has no evidence of being alive a moment ago and is left to the
// breaker's own probes, as ClusterCache leaves it to its retries; a
// 200 from /readyz is evidence that a dial would succeed now, so the open
// period ends and the half-open probe dials at once (actRetry: Pool.Probe,
// no Connect: a cluster removed meanwhile is not brought back); any other
// outcome (401 and 403 included: the dial reads the same credentials and
// its /readyz would get the same answer) schedules the next check. A
// cluster removed, connected, dialing (its probe out: its end is an
// event) or whose breaker is closed (Connect and SetRetry dial it) is
// checked no more.
func decideRevive(v view) (action, time.Duration) {
	switch {
	case !v.present || v.connected || v.dialing || !v.revive.open:
		return actNothing, 0
	case v.in == inRevive && v.revive.recent():
		return actCheck, 0
	case v.in == inRevive:
		return actNothing, 0 // down too long, or never connected: the breaker's probes alone
	case v.err == nil:
		return actRetry, 0 // a 200 is evidence, even one that came back after the window
	case !v.revive.recent():
		return actNothing, 0
	}
	r := v.revive
	r.failed++
	return actNothing, r.delay()
}

// delay is how long after the breaker opened (failed counts the checks
// failed before it), or after the failed-th check failed, the next check
// is due.
func (r revival) delay() time.Duration {
	d := r.every << min(max(r.failed, 0), 2) // R, 2R, 4R: capped
	d = min(d, reviveCap*r.every)
	return time.Duration(float64(d) * (1 + reviveJitter*r.jitter))
}
