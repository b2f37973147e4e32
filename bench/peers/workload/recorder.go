package workload

import (
	"slices"
	"sync"
	"time"
)

// Outcome is how a reconcile ended.
type Outcome int

// The outcomes.
const (
	// Succeeded: the object was read and written in its workload cluster.
	Succeeded Outcome = iota
	// Requeued: no client; the reconcile returned RequeueAfter.
	Requeued
	// Failed: the reconcile returned an error.
	Failed
)

// Recorder collects the figures of one run. It is safe for concurrent use.
type Recorder struct {
	start   time.Time
	bucket  time.Duration
	roles   map[string]Role
	objects int
	// from: healthyDurs holds the reconciles that started at or after it.
	from time.Time

	mu        sync.Mutex
	durations []time.Duration
	okDurs    []time.Duration // of Succeeded reconciles
	// healthyDurs: of Succeeded reconciles of healthy clusters' objects
	// that started at or after from.
	healthyDurs []time.Duration
	buckets     []bucket
	blocked     time.Duration
	requeues    int
	errors      int
	healthyOK   int
	firstOK     map[string]time.Time // object → first success
	clusterOK   map[string]int       // cluster → objects with a success
	doneAt      map[string]time.Time // cluster → when its last object first succeeded
	pending     int                  // measured objects without a success
	allAt       time.Time
	allDone     chan struct{}
	observe     func(cluster string, at time.Time, o Outcome) // see Observe
}

type bucket struct {
	healthyOK int
	durations []time.Duration
}

// NewRecorder starts recording a run of plan now.
func NewRecorder(plan Plan) *Recorder {
	r := &Recorder{start: time.Now(), bucket: plan.Bucket, roles: plan.Roles, objects: plan.Objects, from: plan.MeasureFrom,
		firstOK: map[string]time.Time{}, clusterOK: map[string]int{}, doneAt: map[string]time.Time{},
		allDone: make(chan struct{})}
	for _, role := range plan.Roles {
		if role.Measured() {
			r.pending += plan.Objects
		}
	}
	if r.pending == 0 {
		close(r.allDone)
	}
	return r
}

// Begin restarts the run's clock: call it just before the manager starts.
func (r *Recorder) Begin() {
	r.mu.Lock()
	r.start = time.Now()
	r.mu.Unlock()
}

// Observe makes every later Record call fn with the reconcile's cluster,
// end and outcome, outside the recorder's lock. Call it before the
// reconciles start.
func (r *Recorder) Observe(fn func(cluster string, at time.Time, o Outcome)) { r.observe = fn }

// AllDone is closed once every measured object reconciled successfully.
func (r *Recorder) AllDone() <-chan struct{} { return r.allDone }

// Record adds one reconcile of object (of cluster) that started at start,
// spent blocked waiting for a client or in failed requests, and ended now
// with outcome.
func (r *Recorder) Record(cluster, object string, start time.Time, blocked time.Duration, outcome Outcome) {
	now := time.Now()
	if r.observe != nil {
		defer r.observe(cluster, now, outcome) // runs after the Unlock below
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	d := now.Sub(start)
	r.durations = append(r.durations, d)
	i := int(now.Sub(r.start) / r.bucket)
	for len(r.buckets) <= i {
		r.buckets = append(r.buckets, bucket{})
	}
	b := &r.buckets[i]
	b.durations = append(b.durations, d)
	r.blocked += blocked
	switch outcome {
	case Requeued:
		r.requeues++
		return
	case Failed:
		r.errors++
		return
	}
	r.okDurs = append(r.okDurs, d)
	role := r.roles[cluster]
	if role == Healthy {
		r.healthyOK++
		b.healthyOK++
		if !start.Before(r.from) {
			r.healthyDurs = append(r.healthyDurs, d)
		}
	}
	if _, seen := r.firstOK[object]; seen {
		return
	}
	r.firstOK[object] = now
	r.clusterOK[cluster]++
	if r.clusterOK[cluster] == r.objects {
		r.doneAt[cluster] = now
	}
	if role.Measured() {
		r.pending--
		if r.pending == 0 {
			r.allAt = now
			close(r.allDone)
		}
	}
}

// Figures returns the figures of the run until now.
func (r *Recorder) Figures() Figures {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	run := now.Sub(r.start)
	f := Figures{StartUnixMs: r.start.UnixMilli(), Seconds: run.Seconds(), AllReconciled: -1,
		HealthyPerSec: float64(r.healthyOK) / run.Seconds(), Reconciles: len(r.durations),
		BlockedWorkerSeconds: r.blocked.Seconds(), Requeues: r.requeues, Errors: r.errors,
		ClusterDoneUnixMs: map[string]int64{}}
	if r.pending == 0 {
		f.AllReconciled = r.allAt.Sub(r.start).Seconds()
		if r.allAt.IsZero() {
			f.AllReconciled = 0
		}
	}
	f.P50Ms, f.P99Ms = percentiles(r.durations)
	_, f.OKP99Ms = percentiles(r.okDurs)
	_, f.HealthyOKP99Ms = percentiles(r.healthyDurs)
	for c, t := range r.doneAt {
		f.ClusterDoneUnixMs[c] = t.UnixMilli()
	}
	for i, b := range r.buckets {
		width := r.bucket
		if end := time.Duration(i+1) * r.bucket; end > run {
			width = run - time.Duration(i)*r.bucket
		}
		_, p99 := percentiles(b.durations)
		f.Series = append(f.Series, Point{T: (time.Duration(i) * r.bucket).Seconds(),
			HealthyPerSec: float64(b.healthyOK) / max(width.Seconds(), 1e-3), P99Ms: p99, Reconciles: len(b.durations)})
	}
	return f
}

// percentiles returns the p50 and p99 of ds in milliseconds (0, 0 when
// empty); it sorts a copy.
func percentiles(ds []time.Duration) (p50, p99 float64) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return ms(s[len(s)/2]), ms(s[min(len(s)-1, len(s)*99/100)])
}
