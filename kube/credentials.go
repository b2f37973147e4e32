package kube

import (
	"context"
	"errors"
	"fmt"
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

// refreshCredentials acts on the changed kubeconfig Secret s of the
// cluster: it parses s as the Dialer's ConfigSource would (a SecretSource
// parses s itself, with its KubeconfigPolicy; another source is asked for
// the config again) and then rotates in place if only the credentials
// changed (rotationInPlace), or reports that nothing changed, that the
// caller must re-dial, or that the new content was refused (the error
// matches ErrCredentialsRefused and quotes no value). It never blocks on a
// lock while the source runs.
func (c *Cluster) refreshCredentials(ctx context.Context, s *corev1.Secret) (rotation, error) {
	if c.src == nil {
		return rotationRedial, nil
	}
	var cfg *rest.Config
	var rev string
	var err error
	if p, ok := c.src.(interface {
		parseSecret(*corev1.Secret) (*rest.Config, string, error)
	}); ok {
		cfg, rev, err = p.parseSecret(s)
	} else {
		cfg, rev, err = c.src.Config(ctx, c.Key)
	}
	if c.rot != nil {
		return c.rot.consider(cfg, rev, err)
	}
	switch {
	case err != nil:
		return rotationRefused, fmt.Errorf("%w: %w", ErrCredentialsRefused, err)
	case rev == "" || rev == c.revision:
		return rotationNone, nil
	}
	return rotationRedial, nil
}

// rotatable reports whether cfg's credentials can be swapped in place: a
// bearer token and/or an inline client certificate and key, and nothing
// that client-go resolves at transport-build time (exec or auth-provider
// plugins, files, a proxy function, a custom transport or TLS hooks).
// Other configs are re-dialed on every change, as before.
func rotatable(cfg *rest.Config) bool {
	return cfg.ExecProvider == nil && cfg.AuthProvider == nil && cfg.BearerTokenFile == "" &&
		cfg.CertFile == "" && cfg.KeyFile == "" && cfg.Proxy == nil && cfg.Transport == nil &&
		cfg.WrapTransport == nil && cfg.TLSClientConfig.CAFile == ""
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
