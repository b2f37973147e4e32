package chaos

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/internal/faultproxy"
	"github.com/clusterpool/clusterpool/internal/grayproxy"
)

// The chaos run's fault classes (the registry, chaosClasses, says what
// each does).
const (
	faultAPIServerStop    = "apiserver-stop"
	faultAPIServerRestart = "apiserver-restart"
	faultBlackhole        = "blackhole"
	faultReset            = "reset"
	faultFirstByte        = "first-byte"
	faultTrickle          = "trickle"
	faultTokenRotate      = "token-rotate"
	faultCertRotate       = "cert-rotate"
	faultSecretDelete     = "secret-delete"
	faultSecretGarbage    = "secret-garbage"
	faultRecreate         = "cluster-recreate"
	faultAdd              = "cluster-add"
	faultInfraFlip        = "infra-flip"
	faultMgmtRestart      = "mgmt-restart"
	faultManagerKill      = "manager-kill"
	faultSlow             = "slow"
	faultErrors20         = "errors-20"
	faultErrors60         = "errors-60"
	faultThrottled        = "throttled"
)

// faultTarget is what a fault's Target indexes.
type faultTarget int

// The targets.
const (
	// targetCluster: a live Cluster (its index); one fault of its own at a
	// time.
	targetCluster faultTarget = iota
	// targetAPIServer: a workload apiserver (its index), shared by every
	// plane; one process fault at a time.
	targetAPIServer
	// targetFleet: every live Cluster (Target -1): the management planes
	// or the managers; one at a time.
	targetFleet
	// targetNew: the next Cluster index (cluster-add); no other fault's.
	targetNew
)

// faultHit is what one fault is applied to: the fault, and its Cluster
// (targetCluster only).
type faultHit struct {
	fault
	c *chaosCluster
}

// applyFunc applies or undoes a fault. A fault on a management-side object
// or a proxy is applied to every plane in one step (onAll); one on a
// shared workload apiserver hits every plane by itself.
type applyFunc func(ctx context.Context, r *chaosRun, h faultHit) error

// faultClass is one entry of the registry: a class's name, its length
// range, its target, how it is applied and how it is undone.
type faultClass struct {
	Name     string
	Min, Max time.Duration
	Target   faultTarget
	// Apart: not drawn from the bag but placed once per run
	// (chaosSchedule).
	Apart bool
	// Gray: a gray fault (the Cluster's gray proxies): judged also by
	// grayTable.
	Gray bool
	// Apply applies the fault; Undo (nil: nothing to undo) undoes it
	// Length later, whatever happened to the run's context.
	Apply, Undo applyFunc
}

// chaosClasses is the registry: every class the run knows, in the order
// the schedule draws and the report lists them. Adding a class here is
// all the schedule, the run and the report need.
var chaosClasses = []faultClass{
	// SIGSTOP a workload apiserver; SIGCONT.
	{Name: faultAPIServerStop, Min: 5 * time.Second, Max: 60 * time.Second, Target: targetAPIServer,
		Apply: signalAPIServer(syscall.SIGSTOP), Undo: signalAPIServer(syscall.SIGCONT)},
	// SIGKILL it; start it again on the same port, certificates and etcd.
	{Name: faultAPIServerRestart, Min: 5 * time.Second, Max: 20 * time.Second, Target: targetAPIServer,
		Apply: func(_ context.Context, r *chaosRun, h faultHit) error { return r.workload[h.Target].Kill() },
		Undo:  func(ctx context.Context, r *chaosRun, h faultHit) error { return r.workload[h.Target].Start(ctx) }},
	// The Cluster's proxies stall every stream; they pass again.
	proxyClass(faultBlackhole, faultproxy.Blackhole),
	// The proxies reset every connection; they pass again.
	proxyClass(faultReset, faultproxy.Reset),
	// firstByteDelay to each new connection's first byte; pass again.
	proxyClass(faultFirstByte, faultproxy.FirstByte),
	// The apiserver's bytes trickle; pass again.
	proxyClass(faultTrickle, faultproxy.Trickle),
	// The Cluster's gray proxies (every plane's) answer 10 times slower;
	// they pass again. Then 20 % or 60 % of the requests answered 500 or
	// 503 (at 60 %, never three in a row); then half of them 429 with
	// Retry-After (fleet.DefaultGrayFaults, issue 43's classes). The
	// 60 %-error fault lasts at least foundWithin, so that a cache can
	// find it while it is on.
	grayClass(faultSlow, fleet.GraySlow, 10*time.Second),
	grayClass(faultErrors20, fleet.GrayErrors20, 10*time.Second),
	grayClass(faultErrors60, fleet.GrayErrors60, foundWithin),
	grayClass(faultThrottled, fleet.GrayThrottled, 10*time.Second),
	// A new token in every plane's Secret; the old ones revoked.
	{Name: faultTokenRotate, Min: 5 * time.Second, Max: 5 * time.Second, Target: targetCluster,
		Apply: func(ctx context.Context, r *chaosRun, h faultHit) error { return r.cf.rotateToken(ctx, h.c) },
		Undo:  func(_ context.Context, r *chaosRun, h faultHit) error { r.cf.revokeTokens(h.c); return nil }},
	// A new client certificate in every plane's Secret (nothing to undo).
	{Name: faultCertRotate, Target: targetCluster,
		Apply: func(ctx context.Context, r *chaosRun, h faultHit) error { return r.cf.rotateCert(ctx, h.c) }},
	// Every plane's kubeconfig Secret deleted; written back.
	{Name: faultSecretDelete, Min: 5 * time.Second, Max: 30 * time.Second, Target: targetCluster,
		Apply: func(ctx context.Context, r *chaosRun, h faultHit) error {
			return onAll(ctx, r.cf.planes, func(ctx context.Context, p *chaosPlane) error {
				return retry(ctx, func(ctx context.Context) error { return p.deleteSecret(ctx, h.c.Name) })
			})
		},
		Undo: restoreSecrets},
	// Every plane's Secret value garbage; written back.
	{Name: faultSecretGarbage, Min: 5 * time.Second, Max: 30 * time.Second, Target: targetCluster,
		Apply: func(ctx context.Context, r *chaosRun, h faultHit) error {
			return onAll(ctx, r.cf.planes, func(ctx context.Context, p *chaosPlane) error {
				return retry(ctx, func(ctx context.Context) error {
					return p.writeSecret(ctx, h.c.Name, []byte("garbage: [not a kubeconfig"))
				})
			})
		},
		Undo: restoreSecrets},
	// The Cluster (and Secret) deleted on every plane; created again
	// (same name, next incarnation) on the next workload apiserver.
	{Name: faultRecreate, Min: 5 * time.Second, Max: 20 * time.Second, Target: targetCluster,
		Apply: func(ctx context.Context, r *chaosRun, h faultHit) error { return r.cf.remove(ctx, h.c, false) },
		Undo: func(ctx context.Context, r *chaosRun, h faultHit) error {
			return r.cf.create(ctx, h.Target, (h.c.Home+1)%len(r.workload), h.c.Incarnation+1)
		}},
	// A new Cluster, on every plane (nothing to undo; the end removes it).
	{Name: faultAdd, Target: targetNew,
		Apply: func(ctx context.Context, r *chaosRun, h faultHit) error {
			return r.cf.create(ctx, h.Target, h.Target%len(r.workload), 1)
		}},
	// infrastructureProvisioned false on every plane; true again.
	{Name: faultInfraFlip, Min: 5 * time.Second, Max: 30 * time.Second, Target: targetCluster,
		Apply: setInfrastructure(false), Undo: setInfrastructure(true)},
	// Every plane's management apiserver killed; started again.
	{Name: faultMgmtRestart, Min: 3 * time.Second, Max: 15 * time.Second, Target: targetFleet,
		Apply: func(ctx context.Context, r *chaosRun, _ faultHit) error {
			return onAll(ctx, r.cf.planes, func(_ context.Context, p *chaosPlane) error { return p.proc.Kill() })
		},
		Undo: func(ctx context.Context, r *chaosRun, _ faultHit) error {
			return onAll(ctx, r.cf.planes, func(ctx context.Context, p *chaosPlane) error { return p.proc.Start(ctx) })
		}},
	// Every manager process SIGKILLed and started again (nothing to undo).
	{Name: faultManagerKill, Target: targetFleet, Apart: true,
		Apply: func(ctx context.Context, r *chaosRun, _ faultHit) error {
			return onAll(ctx, r.sides, func(_ context.Context, s *chaosSide) error {
				s.peer.kill()
				return s.peer.start()
			})
		}},
}

// firstByteDelay is the first-byte fault's wait.
const firstByteDelay = 10 * time.Second

// proxyClass is the class that sets the Cluster's proxies (every plane's)
// to mode for 10-60 s, then back to passing.
func proxyClass(name string, mode faultproxy.Mode) faultClass {
	set := func(m faultproxy.Mode) applyFunc {
		return func(ctx context.Context, r *chaosRun, h faultHit) error {
			return onAll(ctx, r.cf.planes, func(_ context.Context, p *chaosPlane) error {
				px := h.c.Proxies[p.index]
				px.SetDelay(firstByteDelay)
				px.SetMode(m)
				return nil
			})
		}
	}
	return faultClass{Name: name, Min: 10 * time.Second, Max: 60 * time.Second, Target: targetCluster, Apply: set(mode), Undo: set(faultproxy.Pass)}
}

// grayClass is the class that puts the Cluster's gray proxies (every
// plane's) in class's fault for min to 60 s, then back to passing. Every
// plane's proxy gets the same fault, its sequence (which requests fail,
// 500 or 503) seeded by the fault's ID, so that each plane sees the same
// sequence of answers.
func grayClass(name string, class fleet.GrayClass, min time.Duration) faultClass {
	set := func(off bool) applyFunc {
		return func(ctx context.Context, r *chaosRun, h faultHit) error {
			f := fleet.DefaultGrayFaults.Of(class, uint64(h.ID))
			if off {
				f = grayproxy.PassFault()
			}
			return onAll(ctx, r.cf.planes, func(_ context.Context, p *chaosPlane) error { return h.c.Grays[p.index].Set(f) })
		}
	}
	return faultClass{Name: name, Min: min, Max: 60 * time.Second, Target: targetCluster, Gray: true, Apply: set(false), Undo: set(true)}
}

// signalAPIServer sends sig to the fault's workload apiserver.
func signalAPIServer(sig syscall.Signal) applyFunc {
	return func(_ context.Context, r *chaosRun, h faultHit) error { return r.workload[h.Target].Signal(sig) }
}

// setInfrastructure sets the Cluster's infrastructureProvisioned on every
// plane.
func setInfrastructure(provisioned bool) applyFunc {
	return func(ctx context.Context, r *chaosRun, h faultHit) error {
		return onAll(ctx, r.cf.planes, func(ctx context.Context, p *chaosPlane) error {
			return p.setInfrastructure(ctx, h.c.Name, provisioned)
		})
	}
}

// restoreSecrets writes every plane's kubeconfig of the Cluster back.
func restoreSecrets(ctx context.Context, r *chaosRun, h faultHit) error {
	return r.cf.restoreSecrets(ctx, h.c)
}

// classOf returns the registry's entry for name.
func classOf(name string) (faultClass, error) {
	for _, c := range chaosClasses {
		if c.Name == name {
			return c, nil
		}
	}
	return faultClass{}, fmt.Errorf("unknown fault class %q", name)
}

// drawnClasses are the classes the schedule draws from its bag (all but
// those placed apart), in the registry's order.
func drawnClasses() []faultClass {
	var out []faultClass
	for _, c := range chaosClasses {
		if !c.Apart {
			out = append(out, c)
		}
	}
	return out
}

// classOrder lists every class, in the registry's order.
func classOrder() []string {
	out := make([]string, len(chaosClasses))
	for i, c := range chaosClasses {
		out[i] = c.Name
	}
	return out
}
