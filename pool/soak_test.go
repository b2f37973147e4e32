package pool

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/clusterpool/clusterpool/breaker"
)

// The soak: real time and real goroutines (no synctest), a fleet whose
// clusters switch fault modes every epoch. `make soak` runs it for two
// minutes; `make test` runs the short default.
var (
	soakDuration = flag.Duration("soak.duration", 3*time.Second, "how long TestSoak runs")
	soakClusters = flag.Int("soak.clusters", 10000, "clusters of TestSoak")
	soakWorkers  = flag.Int("soak.workers", 200, "goroutines issuing Gets in TestSoak")
)

// Soak settings: everything 200× faster than the defaults, so that a few
// seconds see thousands of dials, trips and probes.
var soakOpts = Options[string, *client]{
	MaxWait:     5 * time.Millisecond,
	DialTimeout: 50 * time.Millisecond,
	Breaker:     breaker.Settings{OpenTimeout: 25 * time.Millisecond, MaxOpenTimeout: 300 * time.Millisecond},
}

const (
	soakEpoch = 250 * time.Millisecond // fault modes change this often
	// soakSlack is what a Get may take beyond its bound, on top of the
	// lateness the workers' own sleeps saw in the same run (the scheduler's
	// and the garbage collector's share on a loaded 2-core machine, large
	// under the race detector): the same goroutines, sampled as often as
	// their Gets. Generous on purpose; the timing goals live in the
	// benchmarks.
	soakSlack = 100 * time.Millisecond
	// soakBudget is the most heap a cluster may cost the pool while dials
	// of most clusters are running or queued (an idle connected cluster
	// costs ≈ 1 KB, bench/sim scenario 5; a dial adds its goroutine's
	// context, span and timer).
	soakBudget = 4096
	// soakThink is what a worker does between two Gets (a reconcile's
	// work): without it 200 workers spinning on instant answers saturate
	// the CPU and the soak measures the scheduler instead of the pool.
	soakThink = 2 * time.Millisecond
)

type soakMode uint8

const (
	modeOK soakMode = iota
	modeHang
	modeRefuse
	modeSlow
	modePanic
)

// mode is cluster c's fault in epoch e: 70 % fine, then hang, refuse, slow
// (between MaxWait and DialTimeout) and panic.
func mode(c string, e int64) soakMode {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%d", c, e)
	switch v := h.Sum32() % 100; {
	case v < 70:
		return modeOK
	case v < 82:
		return modeHang
	case v < 92:
		return modeRefuse
	case v < 97:
		return modeSlow
	default:
		return modePanic
	}
}

// soakFleet counts clients made and closed instead of keeping them, so
// that the test's own records do not count as the pool's heap.
type soakFleet struct {
	start        time.Time
	dials        atomic.Int64
	made, closed atomic.Int64
	closedTwice  atomic.Int64
	nextID       atomic.Int32
}

func (s *soakFleet) mode(c string) soakMode { return mode(c, int64(time.Since(s.start)/soakEpoch)) }

func (s *soakFleet) dial(ctx context.Context, c string) (*client, error) {
	s.dials.Add(1)
	wait := time.Millisecond
	switch s.mode(c) {
	case modeHang:
		<-ctx.Done()
		return nil, ctx.Err()
	case modeRefuse:
		return nil, errRefused
	case modePanic:
		panic("soak: dialer panic")
	case modeSlow:
		wait = 20 * time.Millisecond
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
	}
	s.made.Add(1)
	return &client{key: c, id: s.nextID.Add(1)}, nil
}

type soakStats struct {
	gets, hits, clients int
	waits               waitHist // of Gets that were not answered by a client at once
	bad                 []error
	over                []time.Duration // Gets that took longer than MaxWait+soakSlack (the first 100)
	overErr             []string        // and how they ended
	late                time.Duration   // the most the worker's soakThink sleep overran
}

// waitHist is a histogram of waits in buckets a tenth of an e-fold wide,
// from 1µs: a fixed size however long the soak runs, so that the test's own
// records do not count as the pool's heap.
type waitHist struct {
	n       [200]int64
	total   int64
	longest time.Duration
}

func (h *waitHist) add(d time.Duration) {
	i := 0
	if d > time.Microsecond {
		i = min(len(h.n)-1, int(10*math.Log(float64(d)/float64(time.Microsecond))))
	}
	h.n[i]++
	h.total++
	h.longest = max(h.longest, d)
}

func (h *waitHist) merge(o *waitHist) {
	for i := range h.n {
		h.n[i] += o.n[i]
	}
	h.total += o.total
	h.longest = max(h.longest, o.longest)
}

// quantile returns the upper edge of the bucket holding quantile q.
func (h *waitHist) quantile(q float64) time.Duration {
	var seen int64
	for i, n := range h.n {
		if seen += n; float64(seen) >= q*float64(h.total) {
			return time.Duration(math.Exp(float64(i+1)/10) * float64(time.Microsecond))
		}
	}
	return h.longest
}

func TestSoak(t *testing.T) {
	fleet := &soakFleet{start: time.Now()}
	keys := make([]string, *soakClusters)
	for i := range keys {
		keys[i] = fmt.Sprintf("ns/cluster-%05d", i)
	}
	before := heapInUse()
	goroutines := runtime.NumGoroutine()
	opts := soakOpts
	opts.OnClose = func(_ string, c *client) {
		if c.closed.Add(1) != 1 {
			fleet.closedTwice.Add(1)
		}
		fleet.closed.Add(1)
	}
	p, err := New(fleet.dial, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithTimeout(context.Background(), *soakDuration)
	defer stop()
	stats := make([]soakStats, *soakWorkers)
	var wg sync.WaitGroup
	for w := range stats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			soakWorker(ctx, p, fleet, keys, &stats[w], uint64(w))
		}()
	}
	wg.Wait()
	var all soakStats
	var late time.Duration // the latest a worker's own think-time sleep ended
	for _, s := range stats {
		late = max(late, s.late)
		all.gets += s.gets
		all.hits += s.hits
		all.clients += s.clients
		all.waits.merge(&s.waits)
		all.bad = append(all.bad, s.bad...)
		all.over = append(all.over, s.over...)
		all.overErr = append(all.overErr, s.overErr...)
	}
	perCluster := float64(heapInUse()-before) / float64(len(keys))
	inPool := runtime.NumGoroutine() - goroutines
	p.Close()
	goleak.VerifyNone(t, goleak.IgnoreCurrent())

	if all.waits.total == 0 {
		t.Fatal("no Get waited: the soak did nothing")
	}
	p99 := all.waits.quantile(0.99)
	t.Logf("soak %v: %d clusters, %d workers: %.0f Gets/s (%d Gets, %.1f%% hits, %d with a client), %d dials; "+
		"wait p99 %v, max %v (of %d waits), worker sleeps late by up to %v; heap %.0f B per cluster; %d pool goroutines at the end (dials running; queued dials have none), 0 after Close",
		*soakDuration, len(keys), len(stats), float64(all.gets)/soakDuration.Seconds(), all.gets,
		100*float64(all.hits)/float64(max(all.gets, 1)), all.clients, fleet.dials.Load(),
		p99, all.waits.longest, all.waits.total, late, perCluster, inPool)

	for _, err := range all.bad[:min(len(all.bad), 5)] {
		t.Errorf("undocumented error: %T %v", err, err)
	}
	slack := soakSlack
	if raceEnabled {
		slack = time.Second
	}
	var over []string
	for i, d := range all.over {
		if d > opts.MaxWait+late+slack {
			over = append(over, all.overErr[i])
		}
	}
	if len(over) > 0 {
		t.Errorf("%d Gets waited longer than MaxWait + worker sleep lateness %v + %v, such as %q",
			len(over), late, slack, over[:min(5, len(over))])
	}
	if perCluster > soakBudget {
		t.Errorf("the pool holds %.0f B per cluster, budget %d", perCluster, soakBudget)
	}
	// Throughput is not asserted (a loaded machine under -race manages a few
	// hundred dials in 3 s); only that the soak reached the dialer at all.
	if all.clients == 0 || fleet.dials.Load() < DefaultMaxTotalDials {
		t.Errorf("the soak did little: %d clients, %d dials", all.clients, fleet.dials.Load())
	}
	if made, closed, twice := fleet.made.Load(), fleet.closed.Load(), fleet.closedTwice.Load(); made != closed || twice != 0 {
		t.Errorf("%d clients made, %d OnClose calls, %d clients closed more than once; want every client closed once",
			made, closed, twice)
	}
}

// soakWorker issues Gets until ctx ends: random clusters, a third with a
// deadline of their own; a client in use fails while its cluster is not
// fine, which the worker Reports; now and then a cluster is Removed.
func soakWorker(ctx context.Context, p *Pool[string, *client], fleet *soakFleet, keys []string, st *soakStats, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 99))
	for ctx.Err() == nil {
		slept := time.Now()
		time.Sleep(soakThink)
		st.late = max(st.late, time.Since(slept)-soakThink)
		k := keys[r.IntN(len(keys))]
		gctx, cancel := context.Background(), context.CancelFunc(func() {})
		if r.IntN(3) == 0 {
			gctx, cancel = context.WithTimeout(gctx, time.Duration(r.IntN(10))*time.Millisecond)
		}
		start := time.Now()
		c, err := p.Get(gctx, k)
		waited := time.Since(start)
		cancel()
		st.gets++
		switch {
		case err == nil && waited < 100*time.Microsecond:
			st.hits++
		default:
			st.waits.add(waited)
		}
		if waited > soakOpts.MaxWait+soakSlack && len(st.over) < 100 {
			st.over = append(st.over, waited)
			st.overErr = append(st.overErr, fmt.Sprintf("%v: %v", waited, err))
		}
		if err != nil {
			var pe *Error
			if err == context.DeadlineExceeded && gctx.Err() != nil {
				continue // a deadline already passed: the caller's own error, as is
			}
			if !errors.As(err, &pe) || pe.Cluster != k {
				st.bad = append(st.bad, err)
			}
			continue
		}
		st.clients++
		if c.key != k {
			st.bad = append(st.bad, fmt.Errorf("Get(%s) returned the client of %s", k, c.key))
		}
		if fleet.mode(k) == modeOK {
			p.Report(k, nil)
		} else {
			p.Report(k, errRefused)
		}
		if r.IntN(1000) == 0 {
			p.Remove(k)
		}
	}
}

func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
