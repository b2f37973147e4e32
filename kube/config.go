package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ConfigSource yields the REST config of a workload cluster. revision
// identifies the credentials' version (a Secret's resourceVersion), so that
// a rotation can be noticed; it may be empty.
type ConfigSource interface {
	Config(ctx context.Context, key client.ObjectKey) (cfg *rest.Config, revision string, err error)
}

// ConfigFunc adapts a function to a ConfigSource with an empty revision.
type ConfigFunc func(ctx context.Context, key client.ObjectKey) (*rest.Config, error)

// Config calls f.
func (f ConfigFunc) Config(ctx context.Context, key client.ObjectKey) (*rest.Config, string, error) {
	cfg, err := f(ctx, key)
	return cfg, "", err
}

// KubeconfigSecretKey is the data key of Cluster API's kubeconfig Secret.
const KubeconfigSecretKey = "value"

// KubeconfigSecretName is the name of the Cluster API kubeconfig Secret of
// the named cluster: "<cluster-name>-kubeconfig".
func KubeconfigSecretName(cluster string) string { return cluster + "-kubeconfig" }

// ErrInvalidKubeconfig is matched by the error of a kubeconfig Secret that
// is missing its key or does not parse. The error names the Secret, never
// its content.
var ErrInvalidKubeconfig = errors.New("kube: invalid kubeconfig")

// SecretSource reads Cluster API kubeconfig Secrets
// (<cluster-name>-kubeconfig, key "value", in the cluster's namespace)
// through a management-cluster reader. Use an uncached reader (or one
// whose cache holds Secrets) so that a rotated Secret is read fresh.
type SecretSource struct {
	Reader client.Reader
}

// Config reads and parses key's kubeconfig Secret; revision is a digest of
// the kubeconfig (see KubeconfigRevision), so that only a change of the
// credentials, not of the Secret's labels, counts as a rotation.
func (s SecretSource) Config(ctx context.Context, key client.ObjectKey) (*rest.Config, string, error) {
	name := client.ObjectKey{Namespace: key.Namespace, Name: KubeconfigSecretName(key.Name)}
	var secret corev1.Secret
	if err := s.Reader.Get(ctx, name, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, "", fmt.Errorf("kube: kubeconfig Secret %s not found: %w", name, err)
		}
		return nil, "", fmt.Errorf("kube: reading kubeconfig Secret %s: %w", name, err)
	}
	cfg, err := ParseKubeconfig(secret.Data[KubeconfigSecretKey])
	if err != nil {
		return nil, "", fmt.Errorf("kube: Secret %s key %q: %w", name, KubeconfigSecretKey, err)
	}
	return cfg, KubeconfigRevision(secret.Data[KubeconfigSecretKey]), nil
}

// KubeconfigRevision is the revision SecretSource reports for kubeconfig
// bytes: the first 16 hex digits of their SHA-256. It reveals nothing of
// the credentials.
func KubeconfigRevision(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// ParseKubeconfig turns kubeconfig bytes into a REST config. Its error
// matches ErrInvalidKubeconfig and never contains any of data: parser
// messages can quote the input, so they are not passed on.
func ParseKubeconfig(data []byte) (cfg *rest.Config, err error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrInvalidKubeconfig)
	}
	defer func() {
		if r := recover(); r != nil { // a parser bug must not take the controller down
			cfg, err = nil, fmt.Errorf("%w: parser failed", ErrInvalidKubeconfig)
		}
	}()
	cfg, err = clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%w: does not parse or has no usable context", ErrInvalidKubeconfig)
	}
	if cfg.Host == "" {
		return nil, fmt.Errorf("%w: no server", ErrInvalidKubeconfig)
	}
	return cfg, nil
}
