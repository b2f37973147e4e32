package metrics_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/clusterpool/clusterpool/kube/metrics"
)

// gather collects reg's families by name; a Gather error (a duplicate
// series, say) is returned, as a scrape would fail on it.
func gather(reg prometheus.Gatherer) (map[string]*dto.MetricFamily, error) {
	mfs, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out, nil
}

// The pool's metrics reach the registry with Prometheus names, HELP, the
// tracing package's buckets and no cluster, scope or target label.
func TestSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	mp, err := metrics.NewMeterProvider(metrics.Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	drive(t, mp)
	eventually(t, func() error {
		fams, err := gather(reg)
		if err != nil {
			return err
		}
		for name := range fams {
			if !strings.HasPrefix(name, "clusterpool_") {
				return errors.New("a family that is not the pool's: " + name) // e.g. target_info
			}
		}
		return checkFamilies(fams, driven)
	})
}

// A second call with the same Registerer returns the same provider and
// registers nothing more, so the registry gathers without duplicates. Once
// shut down, the provider's metrics are gone, and the next call serves a
// new provider through the collector registered the first time.
func TestCalledTwice(t *testing.T) {
	reg := prometheus.NewRegistry()
	first, err := metrics.NewMeterProvider(metrics.Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	second, err := metrics.NewMeterProvider(metrics.Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if first != second {
		t.Fatal("a second call built a second provider")
	}
	drive(t, second)
	eventually(t, func() error {
		fams, err := gather(reg)
		if err != nil {
			return err
		}
		return checkFamilies(fams, driven) // counted once, not twice
	})

	if err := first.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	fams, err := gather(reg)
	if err != nil {
		t.Fatal(err)
	}
	if len(fams) != 0 {
		t.Fatalf("%d families after Shutdown, want none", len(fams))
	}

	third, err := metrics.NewMeterProvider(metrics.Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { third.Shutdown(context.Background()) })
	if third == first {
		t.Fatal("a shut-down provider was returned")
	}
	drive(t, third)
	eventually(t, func() error {
		fams, err := gather(reg)
		if err != nil {
			return err
		}
		return checkFamilies(fams, driven)
	})
}

// Options{} registers into controller-runtime's registry.
func TestDefaultRegisterer(t *testing.T) {
	byDefault, err := metrics.NewMeterProvider(metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	explicit, err := metrics.NewMeterProvider(metrics.Options{Registerer: ctrlmetrics.Registry})
	if err != nil {
		t.Fatal(err)
	}
	if byDefault != explicit {
		t.Fatal("Options{} and Options{Registerer: ctrlmetrics.Registry} gave different providers")
	}
}

// failingRegisterer refuses every collector.
type failingRegisterer struct{ prometheus.Registerer }

var errRefusedRegistration = errors.New("refused")

func (*failingRegisterer) Register(prometheus.Collector) error { return errRefusedRegistration }

// A registration error is returned, wrapped, and not remembered: the next
// call tries again.
func TestRegisterError(t *testing.T) {
	reg := &failingRegisterer{}
	for range 2 {
		mp, err := metrics.NewMeterProvider(metrics.Options{Registerer: reg})
		if !errors.Is(err, errRefusedRegistration) || mp != nil || !strings.HasPrefix(err.Error(), "metrics: ") {
			t.Fatalf("NewMeterProvider: %v, %v; want a metrics: error wrapping %v", mp, err, errRefusedRegistration)
		}
	}
}

// uncomparable is a Registerer that cannot be a map key.
type uncomparable struct {
	prometheus.Registerer
	tags []string
}

func TestUncomparableRegisterer(t *testing.T) {
	_, err := metrics.NewMeterProvider(metrics.Options{Registerer: uncomparable{Registerer: prometheus.NewRegistry(), tags: []string{"a"}}})
	if err == nil || !strings.HasPrefix(err.Error(), "metrics: ") {
		t.Fatalf("NewMeterProvider: %v, want a metrics: error", err)
	}
}
