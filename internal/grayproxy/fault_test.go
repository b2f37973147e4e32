package grayproxy

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

func TestModeNames(t *testing.T) {
	for m, want := range map[Mode]string{Pass: "pass", Slow: "slow", Errors: "errors", Throttled: "throttled", Mode(9): "unknown", Mode(-1): "unknown"} {
		if got := m.String(); got != want {
			t.Errorf("Mode(%d).String() = %q, want %q", m, got, want)
		}
	}
}

// Set refuses a Fault with an invalid field, naming it, and keeps the
// Fault in force.
func TestSetRefusesInvalidFaults(t *testing.T) {
	p, err := New(Config{Target: &rest.Config{Host: "https://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Set(SlowFor(time.Second)); err != nil {
		t.Fatal(err)
	}
	for field, f := range map[string]Fault{
		"Mode":       {Mode: numModes},
		"Latency":    {Mode: Slow, Latency: -1},
		"Factor":     SlowBy(0.5),
		"Rate":       ErrorRate(1.5, 0),
		"RetryAfter": Throttle(1, -time.Second),
		"Code":       {Mode: Errors, Code: 502},
	} {
		err := p.Set(f)
		if !errors.Is(err, ErrInvalidFault) || !strings.Contains(err.Error(), field) {
			t.Errorf("Set(%+v) = %v, want ErrInvalidFault naming %s", f, err, field)
		}
	}
	for _, f := range []Fault{SlowBy(math.NaN()), ErrorRate(math.NaN(), 0), ErrorRate(-0.1, 0)} {
		if err := p.Set(f); !errors.Is(err, ErrInvalidFault) {
			t.Errorf("Set(%+v) = %v, want ErrInvalidFault", f, err)
		}
	}
	if got := p.Fault(); got != SlowFor(time.Second) {
		t.Fatalf("Fault after refused Sets = %+v, want the last valid one", got)
	}
}

// New refuses a target that is not https on loopback, and ClientCAs it
// cannot use, naming the field.
func TestNewRefusesInvalidConfigs(t *testing.T) {
	for _, c := range []struct {
		field string
		cfg   Config
	}{
		{"Target", Config{}},
		{"Target.Host", Config{Target: &rest.Config{Host: "https://10.0.0.1:6443"}}},
		{"Target.Host", Config{Target: &rest.Config{Host: "http://127.0.0.1:6443"}}},
		{"Target.Host", Config{Target: &rest.Config{Host: "127.0.0.1:6443"}}},
		{"Target.Impersonate", Config{Target: &rest.Config{Host: "https://127.0.0.1:6443", Impersonate: rest.ImpersonationConfig{UserName: "u"}}}},
		{"ClientCAs", Config{Target: &rest.Config{Host: "https://127.0.0.1:6443"}, ClientCAs: []byte("nonsense")}},
		{"BearerToken", Config{Target: &rest.Config{Host: "https://[::1]:6443"}, ClientCAs: mustCA(t).PEM()}},
	} {
		if p, err := New(c.cfg); err == nil {
			p.Close()
			t.Errorf("New accepted a config with a bad %s", c.field)
		} else if !strings.Contains(err.Error(), c.field) {
			t.Errorf("New: %v, want it to name %s", err, c.field)
		}
	}
	p, err := New(Config{Target: &rest.Config{Host: "https://localhost:6443", BearerToken: "secret-token"}, ClientCAs: mustCA(t).PEM()})
	if err != nil {
		t.Fatalf("a token identity: %v", err)
	}
	p.Close()
}

func mustCA(t *testing.T) *CA {
	t.Helper()
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// A hold ends Factor times the apiserver's time to headers after the
// request, Latency on top; Retry-After rounds up to whole seconds.
func TestHoldAndRetryAfterArithmetic(t *testing.T) {
	received := time.Unix(1000, 0)
	h := &holdInfo{received: received}
	headers := received.Add(100 * time.Millisecond)
	for _, c := range []struct {
		f    Fault
		want time.Duration
	}{
		{SlowFor(time.Second), 1100 * time.Millisecond},
		{SlowBy(10), time.Second},
		{Fault{Mode: Slow, Factor: 3, Latency: 50 * time.Millisecond}, 350 * time.Millisecond},
		{Fault{Mode: Slow}, 100 * time.Millisecond},
	} {
		if got := h.until(c.f, headers).Sub(received); got != c.want {
			t.Errorf("%+v holds until %v after the request, want %v", c.f, got, c.want)
		}
	}
	for d, want := range map[time.Duration]int{0: 1, time.Millisecond: 1, time.Second: 1, 1500 * time.Millisecond: 2, 30 * time.Second: 30} {
		if got := Throttle(1, d).retryAfterSeconds(); got != want {
			t.Errorf("Retry-After of %v = %d, want %d", d, got, want)
		}
	}
}
