package grayproxy

import (
	"errors"
	"net/http"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// getRaw gets /api/v1/namespaces/default through cs's REST client,
// without client-go's retries.
func getRaw(t *testing.T, cs *kubernetes.Clientset) error {
	t.Helper()
	return cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/default").MaxRetries(0).Do(ctxT(t)).Error()
}

// Errors(0.6): of 200 requests in a row, 120 (± 2) are answered 500 or
// 503 with a Status client-go decodes, never three in a row; the proxy
// counts exactly what the client saw.
func TestErrorsSixtyPercent(t *testing.T) {
	p := start(t)
	cs := through(t, p, apiserver(t))
	if err := p.Set(ErrorRate(0.6, 1)); err != nil {
		t.Fatal(err)
	}
	var ok, internal, unavailable, run, most int
	for range 200 {
		err := getRaw(t, cs)
		switch {
		case err == nil:
			ok++
			run = 0
			continue
		case apierrors.IsInternalError(err):
			internal++
		case apierrors.IsServiceUnavailable(err):
			unavailable++
		default:
			t.Fatalf("an answer neither 200, 500 nor 503: %v", err)
		}
		run++
		most = max(most, run)
	}
	if n := internal + unavailable; n < 118 || n > 122 {
		t.Fatalf("%d of 200 answers 5xx, want 120 ± 2", n)
	}
	if most > 2 {
		t.Fatalf("%d 5xx answers in a row, want at most 2", most)
	}
	if internal == 0 || unavailable == 0 {
		t.Fatalf("%d 500s and %d 503s, want both", internal, unavailable)
	}
	c := p.Counts(Errors)
	if c.Faulted != uint64(internal+unavailable) || c.Passed != uint64(ok) {
		t.Fatalf("counts %+v, client saw %d ok and %d faulted", c, ok, internal+unavailable)
	}
}

// Throttled answers 429 with Retry-After and a Status of reason
// TooManyRequests, which client-go reads: the error suggests the delay.
func TestThrottledRetryAfter(t *testing.T) {
	p := start(t)
	cs := through(t, p, apiserver(t))
	if err := p.Set(Throttle(1, 2*time.Second)); err != nil {
		t.Fatal(err)
	}
	err := getRaw(t, cs)
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("throttled: %v, want TooManyRequests", err)
	}
	if s, ok := apierrors.SuggestsClientDelay(err); !ok || s != 2 {
		t.Fatalf("suggested delay %d (%v), want 2 s", s, ok)
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Reason != metav1.StatusReasonTooManyRequests {
		t.Fatalf("status of %v, want reason TooManyRequests", err)
	}
	rt, err := rest.TransportFor(p.ClientConfig(apiserver(t)))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctxT(t), http.MethodGet, p.URL()+"/api", nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "2" {
		t.Fatalf("raw answer %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

// At 50 % throttled, client-go's default retries wait out each 429's
// Retry-After and every get succeeds.
func TestThrottledClientGoWaits(t *testing.T) {
	p := start(t)
	cs := through(t, p, apiserver(t))
	if err := p.Set(Throttle(0.5, time.Second)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range 4 {
		if _, err := cs.CoreV1().Namespaces().Get(ctxT(t), "default", metav1.GetOptions{}); err != nil {
			t.Fatalf("with client-go's retries at 50 %% throttled: %v", err)
		}
	}
	c := p.Counts(Throttled)
	if c.Faulted < 1 || c.Passed != 4 {
		t.Fatalf("counts %+v, want the 4 gets passed after at least one 429", c)
	}
	if waited := time.Since(start); waited < time.Duration(c.Faulted)*time.Second {
		t.Fatalf("client-go took %v over %d 429s of Retry-After 1 s", waited, c.Faulted)
	}
}

// Slow holds an answer's headers: a get's and a watch's first byte.
func TestSlowDelaysFirstByte(t *testing.T) {
	p := start(t)
	cs := through(t, p, apiserver(t))
	const d = 300 * time.Millisecond
	if err := p.Set(SlowFor(d)); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	if err := getRaw(t, cs); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(begin); took < d {
		t.Fatalf("a get took %v, want ≥ %v", took, d)
	}
	begin = time.Now()
	w, err := cs.CoreV1().ConfigMaps("default").Watch(ctxT(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	if took := time.Since(begin); took < d {
		t.Fatalf("a watch started after %v, want ≥ %v", took, d)
	}
	if c := p.Counts(Slow); c.Passed != 2 || c.Slowed != 2 {
		t.Fatalf("counts %+v, want 2 passed and slowed", c)
	}
}

// A switch out of Slow releases the answers held.
func TestSwitchReleasesHeldAnswers(t *testing.T) {
	p := start(t)
	cs := through(t, p, apiserver(t))
	if err := p.Set(SlowFor(time.Hour)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- getRaw(t, cs) }()
	waitFor(t, func() bool { return p.Counts(Slow).Slowed == 1 })
	if err := p.Set(SlowFor(2 * time.Hour)); err != nil { // still Slow: still held
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("a switch to another Slow released the answer: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := p.Set(PassFault()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("released answer: %v", err)
	}
}

// waitFor polls cond (a count the proxy keeps) until it holds, within a
// generous bound.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
