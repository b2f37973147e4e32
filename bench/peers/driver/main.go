package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/beforeafter"
	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/chaos"
	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/mhc"
	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/peers"
	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/rotation"
	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/scale"
)

// options are the command line: the shared flags and each experiment's.
type options struct {
	shared   *fleet.Shared
	peers    *peers.Options
	scale    *scale.Options
	rotation *rotation.Options
	mhc      *mhc.Options
	chaos    *chaos.Options
	ba       *beforeafter.Options
}

func main() {
	if os.Getenv(scale.ProxyHostEnv) != "" { // a scale run's proxy host (internal/scale/proxyhost.go)
		os.Exit(scale.ServeProxyHost(os.Stdin, os.Stdout))
	}
	// envtest and the controller-runtime client log through
	// controller-runtime's logger: without one set it prints a
	// "log.SetLogger(...) was never called" stack dump.
	log := logr.Discard()
	if os.Getenv("PEER_LOG") != "" {
		log = funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{})
	}
	ctrllog.SetLogger(log)
	o, err := parseFlags(os.Args[1:])
	if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err = run(ctx, o, os.Stdout)
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-peers:", err)
		os.Exit(1)
	}
}

// parseFlags defines every experiment's flags, parses args and applies
// the defaults, -smoke's first.
func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("driver", flag.ContinueOnError)
	sh := fleet.Flags(fs)
	o := options{shared: sh, peers: peers.Register(fs, sh), scale: scale.Register(fs, sh), rotation: rotation.Register(fs, sh),
		mhc: mhc.Register(fs, sh), chaos: chaos.Register(fs, sh), ba: beforeafter.Register(fs, sh)}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.peers.ApplySmoke()
	sh.SplitStrategies()
	err := o.scale.Defaults(fs)
	sh.AddExtra()
	for _, defaults := range []func() error{
		func() error { return o.rotation.Defaults(fs) },
		func() error { return o.chaos.Defaults(fs) },
		o.mhc.Defaults,
		o.peers.Defaults,
		sh.Validate,
	} {
		if err != nil {
			return o, err
		}
		err = defaults()
	}
	return o, err
}

// run runs the experiment o asks for, from the repository's top
// directory, its report to out.
func run(ctx context.Context, o options, out io.Writer) error {
	root, err := fleet.RepoRoot()
	if err != nil {
		return err
	}
	o.shared.Root, o.shared.Out = root, out
	_, runIt := o.experiment()
	return runIt(ctx)
}

// experiment is the run o asks for, by name (its package's). Runs from a
// file come first (the model check or the scale tables of a report), then
// the MachineHealthCheck, chaos and before/after runs, the scale and
// rotation runs, and by default the bench-peers run.
func (o options) experiment() (string, func(context.Context) error) {
	switch {
	case o.peers.ModelFrom != "":
		return "peers", func(ctx context.Context) error { return peers.Run(ctx, o.peers) }
	case o.scale.From != "":
		return "scale", func(ctx context.Context) error { return scale.Run(ctx, o.scale) }
	case o.mhc.On:
		return "mhc", func(ctx context.Context) error { return mhc.Run(ctx, o.mhc) }
	case o.chaos.On:
		return "chaos", func(ctx context.Context) error { return chaos.Run(ctx, o.chaos) }
	case o.ba.Dir != "":
		return "beforeafter", func(ctx context.Context) error { return beforeafter.Run(ctx, o.ba) }
	case o.scale.On():
		return "scale", func(ctx context.Context) error { return scale.Run(ctx, o.scale) }
	case o.rotation.On():
		return "rotation", func(ctx context.Context) error { return rotation.Run(ctx, o.rotation) }
	}
	return "peers", func(ctx context.Context) error { return peers.Run(ctx, o.peers) }
}
