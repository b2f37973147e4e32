package shard

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// ScopeName is the instrumentation scope of the Sharder's meter.
const ScopeName = "github.com/clusterpool/clusterpool/kube/shard"

// ChangeKey is the attribute of clusterpool.shard.ownership.changes:
// "gained" or "lost". No metric has a cluster attribute.
const ChangeKey = attribute.Key("clusterpool.shard.change")

// metrics records clusterpool.shard.clusters.owned and
// clusterpool.shard.members (observed gauges) and
// clusterpool.shard.ownership.changes (a counter).
type metrics struct {
	meter   metric.Meter
	owned   metric.Int64ObservableGauge
	members metric.Int64ObservableGauge
	changes metric.Int64Counter
	gained  []metric.AddOption
	lost    []metric.AddOption
}

func newMetrics(mp metric.MeterProvider) (*metrics, error) {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := &metrics{meter: mp.Meter(ScopeName),
		gained: []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(ChangeKey.String("gained")))},
		lost:   []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(ChangeKey.String("lost")))},
	}
	var err error
	if m.owned, err = m.meter.Int64ObservableGauge("clusterpool.shard.clusters.owned",
		metric.WithDescription("Clusters this replica owns.")); err != nil {
		return nil, fmt.Errorf("shard: clusterpool.shard.clusters.owned: %w", err)
	}
	if m.members, err = m.meter.Int64ObservableGauge("clusterpool.shard.members",
		metric.WithDescription("Live members of the group as this replica last saw them.")); err != nil {
		return nil, fmt.Errorf("shard: clusterpool.shard.members: %w", err)
	}
	if m.changes, err = m.meter.Int64Counter("clusterpool.shard.ownership.changes",
		metric.WithDescription("Clusters gained and lost by this replica.")); err != nil {
		return nil, fmt.Errorf("shard: clusterpool.shard.ownership.changes: %w", err)
	}
	return m, nil
}

// observe registers the gauges' callback, reading counts from f, until
// the returned function is called.
func (m *metrics) observe(f func() (owned, members int)) (func(), error) {
	reg, err := m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		owned, members := f()
		o.ObserveInt64(m.owned, int64(owned))
		o.ObserveInt64(m.members, int64(members))
		return nil
	}, m.owned, m.members)
	if err != nil {
		return nil, fmt.Errorf("shard: registering the gauges: %w", err)
	}
	return func() { reg.Unregister() }, nil //nolint:errcheck // nothing to do about it
}

// count records evs.
func (m *metrics) count(evs []Event) {
	var gained, lost int64
	for _, ev := range evs {
		if ev.Type == Gained {
			gained++
		} else {
			lost++
		}
	}
	if gained > 0 {
		m.changes.Add(context.Background(), gained, m.gained...)
	}
	if lost > 0 {
		m.changes.Add(context.Background(), lost, m.lost...)
	}
}
