package pool

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
)

// The fault matrix: one row per fault × phase, each with the outcome of the
// Get that meets the fault and the events the pool sends. Phases: the first
// dial of a cluster; an established connection, where the fault shows up as
// errors the caller Reports; and the half-open probe. The breaker opens on
// one failure here (ConsecutiveFailures 1), with exact open periods of 1s,
// 2s, ...
//
// Unauthorized and a rotated Secret are kube-level faults, tested on real
// apiservers in package kube: TestCredentialsNeverLeak (first dial
// Unauthorized: ErrDialFailed matching apierrors.IsUnauthorized),
// TestProbeUnauthorizedRedials (established: the prober's Unauthorized
// removes the cluster and redials with fresh credentials) and
// TestRotatedSecretIsPickedUp (a rotated Secret replaces the client).
var faultOpts = Options[string, *client]{
	Breaker: breaker.Settings{ConsecutiveFailures: 1, OpenTimeout: time.Second, DisableJitter: true,
		IsFailure: propIsFailure}, // ignores errIgnored, panics on errClassPanic
}

const slowDial = time.Second // between MaxWait (50ms) and DialTimeout (10s)

type faultRow struct {
	fault string
	want  error         // the Get's error (errors.Is); nil: a client
	after [][]EventType // events after the phase's own; each group is sent at one instant
	up    bool          // a client is cached at the end
}

var (
	opened    = []EventType{BreakerOpened}
	halfOpen  = []EventType{BreakerHalfOpen}
	connected = []EventType{Connected}
	evicted   = []EventType{Disconnected, BreakerOpened}
	closedUp  = []EventType{BreakerClosed, Connected}
)

func TestFaultsFirstDial(t *testing.T) {
	runFaults(t, nil, func(t *testing.T, h *faultHarness, fault string) error {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		res := getAsync(ctx, h.p, "k")
		synctest.Wait()
		h.dialFault(t, fault, cancel)
		return (<-res).err
	}, []faultRow{
		{fault: "hang", want: ErrWaitTimeout, after: [][]EventType{opened}},
		{fault: "refuse", want: ErrDialFailed, after: [][]EventType{opened}},
		{fault: "slow", want: ErrWaitTimeout, after: [][]EventType{connected}, up: true},
		{fault: "flap", want: ErrDialFailed, after: [][]EventType{opened, halfOpen, closedUp}, up: true},
		{fault: "panic", want: ErrDialPanic, after: [][]EventType{opened}},
		{fault: "ignored", want: ErrDialFailed, after: [][]EventType{{DialFailed}}},
		{fault: "classifier-panic", want: ErrDialFailed, after: [][]EventType{opened}},
		{fault: "nil", want: ErrDialFailed, after: [][]EventType{opened}},
		{fault: "cancel", want: context.Canceled, after: [][]EventType{connected}, up: true},
		{fault: "remove", want: ErrRemoved, after: [][]EventType{{Removed}}},
		{fault: "close", want: ErrClosed},
	})
}

func TestFaultsEstablished(t *testing.T) {
	runFaults(t, func(t *testing.T, h *faultHarness) { connect(t, h.p, h.f, "k") }, func(t *testing.T, h *faultHarness, fault string) error {
		switch fault {
		case "hang": // a request timed out
			h.p.Report("k", fmt.Errorf("GET /api: %w", context.DeadlineExceeded))
		case "refuse":
			h.p.Report("k", errRefused)
		case "slow": // slow but answered: a success
			h.p.Report("k", nil)
		case "flap":
			h.p.Report("k", errRefused)
			time.Sleep(faultOpts.Breaker.OpenTimeout)
			synctest.Wait()
			h.f.next(t).succeed()
		case "cancel": // the caller gave up: neither success nor failure
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			h.p.Report("k", ctx.Err())
			_, err := h.p.Get(ctx, "k") // a hit needs no context
			return err
		case "remove":
			h.p.Remove("k")
			res := getAsync(context.Background(), h.p, "k")
			synctest.Wait()
			h.f.next(t).succeed()
			return (<-res).err
		case "close":
			h.p.Close()
		}
		synctest.Wait()
		_, err := h.p.Get(context.Background(), "k")
		return err
	}, []faultRow{
		{fault: "hang", want: ErrCircuitOpen, after: [][]EventType{evicted}},
		{fault: "refuse", want: ErrCircuitOpen, after: [][]EventType{evicted}},
		{fault: "slow", up: true},
		{fault: "flap", after: [][]EventType{evicted, halfOpen, closedUp}, up: true},
		{fault: "cancel", up: true},
		{fault: "remove", after: [][]EventType{{Disconnected, Removed}, connected}, up: true},
		{fault: "close", want: ErrClosed},
	})
}

func TestFaultsHalfOpenProbe(t *testing.T) {
	open := func(t *testing.T, h *faultHarness) {
		if err := failDial(t, h.p, h.f, "k", errRefused); !errors.Is(err, ErrDialFailed) {
			t.Fatalf("opening dial: %v", err)
		}
		time.Sleep(faultOpts.Breaker.OpenTimeout)
		synctest.Wait() // the probe is out
	}
	runFaults(t, open, func(t *testing.T, h *faultHarness, fault string) error {
		switch fault {
		case "flap":
			h.f.next(t).fail(errRefused)
			time.Sleep(2 * faultOpts.Breaker.OpenTimeout) // the second open period
			synctest.Wait()
			h.f.next(t).succeed()
		case "cancel": // callers are rejected while the probe is out, canceled or not
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err := h.p.Get(ctx, "k")
			h.f.next(t).succeed()
			return err
		case "remove": // resets the breaker and cancels the probe; the next Get dials afresh
			h.p.Remove("k")
			synctest.Wait()
			h.f.next(t) // the canceled probe
			res := getAsync(context.Background(), h.p, "k")
			synctest.Wait()
			h.f.next(t).succeed()
			return (<-res).err
		default:
			h.dialFault(t, fault, nil)
		}
		synctest.Wait()
		_, err := h.p.Get(context.Background(), "k")
		return err
	}, []faultRow{
		{fault: "hang", want: ErrCircuitOpen, after: [][]EventType{opened}},
		{fault: "refuse", want: ErrCircuitOpen, after: [][]EventType{opened}},
		{fault: "slow", after: [][]EventType{closedUp}, up: true},
		{fault: "flap", after: [][]EventType{opened, halfOpen, closedUp}, up: true},
		{fault: "panic", want: ErrCircuitOpen, after: [][]EventType{opened}},
		// A probe always ends in a decision: an error the classifier does
		// not count re-opens the breaker (it used to wedge it half-open).
		{fault: "ignored", want: ErrCircuitOpen, after: [][]EventType{opened}},
		{fault: "classifier-panic", want: ErrCircuitOpen, after: [][]EventType{opened}},
		{fault: "nil", want: ErrCircuitOpen, after: [][]EventType{opened}},
		{fault: "cancel", want: ErrCircuitOpen, after: [][]EventType{closedUp}, up: true},
		{fault: "remove", after: [][]EventType{{Removed}, connected}, up: true},
		{fault: "close", want: ErrClosed},
	})
}

type faultHarness struct {
	p *Pool[string, *client]
	f *fakeDialer
}

// dialFault makes the dial in progress meet fault; cancel is the waiting
// caller's cancel, if any.
func (h *faultHarness) dialFault(t *testing.T, fault string, cancel context.CancelFunc) {
	t.Helper()
	r := h.f.next(t)
	switch fault {
	case "hang":
		time.Sleep(DefaultDialTimeout) // the fake returns its context's error
	case "refuse":
		r.fail(errRefused)
	case "slow":
		time.Sleep(slowDial)
		r.succeed()
	case "flap": // fails now, the probe after the open period succeeds
		r.fail(errRefused)
		time.Sleep(faultOpts.Breaker.OpenTimeout)
		synctest.Wait()
		h.f.next(t).succeed()
	case "panic":
		r.panicWith("boom")
	case "ignored": // an error the classifier does not count
		r.fail(errIgnored)
	case "classifier-panic": // the classifier panics on the dial's error: a failure
		r.fail(errClassPanic)
	case "nil": // a nil client and no error: a failure
		r.reply <- dialReply{nilClient: true}
	case "cancel":
		cancel()
		synctest.Wait()
		r.succeed() // the dial was not the caller's: it lands all the same
	case "remove":
		h.p.Remove("k")
	case "close":
		h.p.Close()
	default:
		t.Fatalf("unknown fault %q", fault)
	}
	synctest.Wait()
}

// runFaults runs one subtest per row: setup, then the phase's own events
// are expected, then inject meets the fault and returns the Get's error.
func runFaults(t *testing.T, setup func(*testing.T, *faultHarness), inject func(*testing.T, *faultHarness, string) error, rows []faultRow) {
	for _, row := range rows {
		t.Run(row.fault, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake()
				h := &faultHarness{p: newPool(t, f, faultOpts), f: f}
				ev := subscribe(t.Context(), h.p)
				if setup != nil {
					setup(t, h)
				}
				synctest.Wait()
				phase := len(ev.types())
				err := inject(t, h, row.fault)
				synctest.Wait()
				if (row.want == nil) != (err == nil) || (row.want != nil && !errors.Is(err, row.want)) {
					t.Errorf("Get: %v, want %v", err, row.want)
				}
				if got := ev.types()[phase:]; !eventsMatch(got, row.after) {
					t.Errorf("events %v, want %v (each group may arrive coalesced to its tail)", got, row.after)
				}
				if _, up := h.p.Peek("k"); up != row.up {
					t.Errorf("client cached: %v, want %v", up, row.up)
				}
			})
		})
	}
}

// eventsMatch reports whether got is want with each group (events sent at
// one instant) possibly coalesced: a subscriber that had not received an
// event yet finds it replaced by the key's next one, so a group arrives as
// a subsequence of itself that keeps its last event.
func eventsMatch(got []EventType, want [][]EventType) bool {
	for _, g := range want {
		for _, e := range g[:len(g)-1] { // may have been replaced
			if len(got) > 0 && got[0] == e {
				got = got[1:]
			}
		}
		if len(got) == 0 || got[0] != g[len(g)-1] {
			return false
		}
		got = got[1:]
	}
	return len(got) == 0
}
