package shard

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel/metric"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/internal/opt"
)

// Defaults of Options.
const (
	DefaultGroup         = "default"
	DefaultNamespace     = "default"
	DefaultLeaseDuration = 15 * time.Second
)

// GroupLabel is the label that names a Lease's group. Replicas shard the
// clusters with the live members of their own group only.
const GroupLabel = "clusterpool.io/shard-group"

// KeyLister lists the cluster keys to shard, e.g. [ListKeys] over the
// manager's cache. It is called once per renewal; an error keeps the keys of
// the previous call.
type KeyLister func(ctx context.Context) ([]client.ObjectKey, error)

// Options configures a Sharder. Zero fields are the defaults.
type Options struct {
	// Group names the set of replicas that shard clusters among themselves;
	// it is the value of GroupLabel on their Leases and must be a valid
	// label value. Zero means "default".
	Group string
	// Identity names this replica; it must be unique in the group and stable
	// for the process's life (a Pod name). The Lease is named
	// "<Group>-<Identity>". Zero means the host name.
	Identity string
	// Namespace holds the group's Leases. Zero means "default".
	Namespace string
	// LeaseDuration is how long the others wait, after they last saw this
	// replica's Lease change, before they treat it as gone; it is also the
	// hand-over delay of a joining replica. Whole seconds (a Lease stores
	// seconds), at least 1s. Zero means 15s.
	LeaseDuration time.Duration
	// RenewDeadline is how long a replica keeps owning clusters after the
	// start of its last completed renewal; it must be below LeaseDuration,
	// and LeaseDuration − RenewDeadline is the margin for clock-rate drift
	// and slow timers. Zero means two thirds of LeaseDuration.
	RenewDeadline time.Duration
	// RenewInterval is the time between the starts of two renewals; it must
	// be below RenewDeadline. Zero means a quarter of RenewDeadline.
	RenewInterval time.Duration
	// Clusters lists the keys to shard. Required.
	Clusters KeyLister
	// Pool, if set, has clusters removed when lost and dialed in the
	// background when gained; see PoolOf.
	Pool Pool
	// MeterProvider receives the metrics; nil means the otel global.
	MeterProvider metric.MeterProvider
	// Clock is the time source; nil means the real clock.
	Clock clock.Clock
	// Logger receives failed renewals; the zero value discards them.
	Logger logr.Logger
}

// validate fills the defaults of o and checks it.
func (o *Options) validate() error {
	if err := o.withDefaults(); err != nil {
		return err
	}
	return o.check()
}

// withDefaults sets every zero field of o to its default. It fails only
// when Identity is empty and the host name is unknown.
func (o *Options) withDefaults() error {
	opt.Default(&o.Group, DefaultGroup)
	opt.Default(&o.Namespace, DefaultNamespace)
	if o.Identity == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("%w: Options.Identity is empty and the host name is unknown: %v", ErrInvalidOptions, err)
		}
		o.Identity = strings.ToLower(host)
	}
	opt.Default(&o.LeaseDuration, DefaultLeaseDuration)
	opt.Default(&o.RenewDeadline, o.LeaseDuration*2/3)
	opt.Default(&o.RenewInterval, o.RenewDeadline/4)
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return nil
}

// check returns an error naming the first invalid field of o, defaults
// applied.
func (o *Options) check() error {
	switch {
	case len(validation.IsValidLabelValue(o.Group)) > 0:
		return invalid("Group", o.Group, "must be a valid label value")
	case len(validation.IsDNS1123Subdomain(o.leaseName())) > 0:
		return invalid("Identity", o.Identity, "must make \"<Group>-<Identity>\" a valid object name")
	case len(validation.IsDNS1123Label(o.Namespace)) > 0:
		return invalid("Namespace", o.Namespace, "must be a valid namespace name")
	case o.LeaseDuration < time.Second || o.LeaseDuration%time.Second != 0:
		return invalid("LeaseDuration", o.LeaseDuration, "must be a whole number of seconds, at least 1s")
	case o.RenewDeadline <= 0 || o.RenewDeadline >= o.LeaseDuration:
		return invalid("RenewDeadline", o.RenewDeadline, "must be positive and below LeaseDuration")
	case o.RenewInterval <= 0 || o.RenewInterval >= o.RenewDeadline:
		return invalid("RenewInterval", o.RenewInterval, "must be positive and below RenewDeadline")
	case o.Clusters == nil:
		return invalid("Clusters", nil, "is required")
	}
	return nil
}

// leaseName is the name of this replica's Lease.
func (o *Options) leaseName() string { return o.Group + "-" + o.Identity }

func invalid(field string, v any, why string) error {
	return fmt.Errorf("%w: Options.%s=%v %s", ErrInvalidOptions, field, v, why)
}
