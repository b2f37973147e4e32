package kube

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
)

// ErrCredentialsRefused is matched by the error SecretWatcher reports (log
// line and Warning event on the Secret) when a connected cluster's
// kubeconfig Secret changed but its new content cannot be used: the
// ConfigSource refused it (KubeconfigPolicy: ErrKubeconfigRefused and
// ErrInvalidKubeconfig match too), could not read it, or its client
// certificate and key do not form a pair. The cluster keeps the
// credentials it had. The error names the Secret and the field, never a
// value.
var ErrCredentialsRefused = errors.New("kube: new credentials not used, the cluster keeps its current ones")

// rotation is what a changed kubeconfig means for a connected Cluster.
type rotation int

const (
	// rotationNone: the source holds the revision the cluster uses.
	rotationNone rotation = iota
	// rotationInPlace: only the credentials changed and the cluster now
	// uses the new ones; nothing else changed.
	rotationInPlace
	// rotationRedial: something besides the credentials changed (or the
	// cluster cannot rotate in place): remove it and dial again.
	rotationRedial
	// rotationRefused: the new content cannot be used; the cluster keeps
	// its credentials (the error says why).
	rotationRefused
)

// secretParser is a ConfigSource that parses a kubeconfig Secret it is
// handed, as its Config does once it has read one (SecretSource): the
// SecretWatcher then uses the Secret of the event, which the source's
// reader may not hold yet.
type secretParser interface {
	parseSecret(*corev1.Secret) (*rest.Config, string, error)
}

// refreshCredentials acts on the changed kubeconfig of the cluster: the
// Secret s, parsed as the Dialer's ConfigSource would (a secretParser
// parses s itself, with its KubeconfigPolicy), or, for another source or
// a nil s, the config the source returns now. It then rotates in place if
// only the credentials changed (rotationInPlace), or reports that nothing
// changed, that the caller must re-dial, or that the new content was
// refused (the error matches ErrCredentialsRefused and quotes no value);
// see judgeConfig. It never blocks on a lock while the source runs.
func (c *Cluster) refreshCredentials(ctx context.Context, s *corev1.Secret) (rotation, error) {
	if c.src == nil {
		return rotationRedial, nil
	}
	var cfg *rest.Config
	var rev string
	var err error
	if p, ok := c.src.(secretParser); ok && s != nil {
		cfg, rev, err = p.parseSecret(s)
	} else {
		cfg, rev, err = c.src.Config(ctx, c.Key)
	}
	if c.rot != nil {
		return c.rot.consider(cfg, rev, err)
	}
	return judgeConfig(c.revision, nil, cfg, rev, err)
}

// judgeConfig is the one place that says what a config read from a cluster's
// ConfigSource (cfg at rev, or err) means for the cluster, which uses
// revision cur and was dialed with base (nil if its config cannot rotate
// in place): refused (err), nothing (rev is empty or cur), a re-dial
// (anything but the credentials changed, or either config is not
// rotatable), or an in-place rotation, which the caller applies.
func judgeConfig(cur string, base *withoutCredentials, cfg *rest.Config, rev string, err error) (rotation, error) {
	switch {
	case err != nil:
		return rotationRefused, fmt.Errorf("%w: %w", ErrCredentialsRefused, err)
	case rev == "" || rev == cur:
		return rotationNone, nil
	case base == nil || !onlyCredentials(*base, cfg):
		return rotationRedial, nil
	}
	return rotationInPlace, nil
}

// rotatable reports whether cfg's credentials can be swapped in place: a
// bearer token and/or an inline client certificate and key, and nothing
// that client-go resolves at transport-build time or that shapes the
// connection from outside the config's data: exec or auth-provider
// plugins, files, and the function fields Proxy, Dial, Transport and
// WrapTransport (a custom ConfigSource's hooks, which the rotator's own
// transport would bypass). Other configs are re-dialed on every change.
// TestRotatableReviewsEveryConfigField fails when client-go adds a field.
func rotatable(cfg *rest.Config) bool {
	return cfg.ExecProvider == nil && cfg.AuthProvider == nil && cfg.BearerTokenFile == "" &&
		cfg.CertFile == "" && cfg.KeyFile == "" && cfg.CAFile == "" && cfg.Proxy == nil &&
		cfg.Dial == nil && cfg.Transport == nil && cfg.WrapTransport == nil
}

// withoutCredentials is everything of a source's REST config that
// KubeconfigPolicy and the connection depend on, without the credentials
// (bearer token, client certificate and key): two configs whose
// withoutCredentials are deeply equal differ only in credentials.
type withoutCredentials struct {
	Host, APIPath      string
	TLS                rest.TLSClientConfig
	Username, Password string
	Impersonate        rest.ImpersonationConfig
	DisableCompression bool
	UserAgent          string
	Timeout            time.Duration
	Rotatable          bool
}

func sansCredentials(cfg *rest.Config) withoutCredentials {
	tls := cfg.TLSClientConfig
	tls.CertData, tls.KeyData = nil, nil
	return withoutCredentials{Host: cfg.Host, APIPath: cfg.APIPath, TLS: tls, Username: cfg.Username,
		Password: cfg.Password, Impersonate: cfg.Impersonate, DisableCompression: cfg.DisableCompression,
		UserAgent: cfg.UserAgent, Timeout: cfg.Timeout, Rotatable: rotatable(cfg)}
}

// onlyCredentials reports whether cfg differs from a dialed config whose
// withoutCredentials is base in its credentials alone, and is rotatable.
func onlyCredentials(base withoutCredentials, cfg *rest.Config) bool {
	s := sansCredentials(cfg)
	return s.Rotatable && reflect.DeepEqual(s, base)
}
