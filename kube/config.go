package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/internal/kubeconfigpolicy"
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
// is missing its key, does not parse, or is refused by its
// KubeconfigPolicy (then ErrKubeconfigRefused matches too). The error
// names the Secret and the offending field, never the content.
var ErrInvalidKubeconfig = kubeconfigpolicy.ErrInvalid

// SecretSource reads Cluster API kubeconfig Secrets
// (<cluster-name>-kubeconfig, key "value", in the cluster's namespace)
// through a management-cluster reader. Use an uncached reader (or one
// whose cache holds Secrets) so that a rotated Secret is read fresh.
//
// Kubeconfig Secrets are untrusted input: each is parsed with
// ParseKubeconfigWith and Policy, whose zero value refuses exec plugins,
// auth-provider plugins, file references, insecure TLS, proxies and
// impersonation. A refused Secret is a failed dial like any other.
type SecretSource struct {
	// Reader reads the Secrets. Prefer a cached reader, such as the
	// manager's client, whose Secret informer SecretWatcher shares: an
	// uncached one (mgr.GetAPIReader) costs a GET per dial under the
	// manager's client-side rate limit (client-go's default is 5 per
	// second, burst 10), which spreads the first connects of many clusters
	// over seconds (bench/peers/results/peers-runs.md).
	Reader client.Reader
	// Live, when set, reads the Secret instead of Reader when the read
	// must not come from a cache (NeedsFreshConfig): the dials of a
	// Cluster object created again under a name the Dialer dialed before
	// for another object, until Reader serves the new Secret, since
	// Reader's cache may still hold the deleted object's Secret, which
	// names another cluster. It needs the Dialer's
	// DialerOptions.ObjectUID (Admission.UID). Pass an uncached reader:
	// the manager's GetAPIReader. Each such dial costs one GET; every
	// other dial, endpoint check and rotation reads Reader. A Secret Live
	// does not find fails the dial, as one Reader does not find does. nil
	// reads every Secret through Reader: a re-created Cluster may then be
	// dialed with its deleted predecessor's Secret while Reader's cache
	// lags.
	Live client.Reader
	// Policy is what a kubeconfig may use beyond inline data; the zero
	// value allows nothing (see KubeconfigPolicy).
	Policy KubeconfigPolicy
}

// Config reads and parses key's kubeconfig Secret, through Live if it is
// set and ctx NeedsFreshConfig, else through Reader; revision is a digest
// of the kubeconfig (see KubeconfigRevision), so that only a change of
// the credentials, not of the Secret's labels, counts as a rotation.
func (s SecretSource) Config(ctx context.Context, key client.ObjectKey) (*rest.Config, string, error) {
	name := client.ObjectKey{Namespace: key.Namespace, Name: KubeconfigSecretName(key.Name)}
	r := s.Reader
	if s.Live != nil && NeedsFreshConfig(ctx) {
		r = s.Live
	}
	var secret corev1.Secret
	if err := r.Get(ctx, name, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, "", fmt.Errorf("kube: kubeconfig Secret %s not found: %w", name, err)
		}
		return nil, "", fmt.Errorf("kube: reading kubeconfig Secret %s: %w", name, err)
	}
	return s.parseSecret(&secret)
}

// parseSecret parses a kubeconfig Secret as Config does once it has read
// it: SecretWatcher hands it the Secret of its event, so that a rotation
// does not wait for Reader's cache to catch up.
func (s SecretSource) parseSecret(secret *corev1.Secret) (*rest.Config, string, error) {
	cfg, err := ParseKubeconfigWith(secret.Data[KubeconfigSecretKey], s.Policy)
	if err != nil {
		return nil, "", fmt.Errorf("kube: Secret %s/%s key %q: %w", secret.Namespace, secret.Name, KubeconfigSecretKey, err)
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

// ParseKubeconfig turns kubeconfig bytes into a REST config under the
// strict zero KubeconfigPolicy: ParseKubeconfigWith(data, KubeconfigPolicy{}).
func ParseKubeconfig(data []byte) (*rest.Config, error) {
	return ParseKubeconfigWith(data, KubeconfigPolicy{})
}

// ParseKubeconfigWith turns kubeconfig bytes into a REST config, refusing
// every capability policy does not allow before any client-go code
// interprets the config: nothing is executed and no local file is read
// unless policy says so. Only the current context is used: it must exist
// and name a cluster with an https server (http with AllowInsecureTLS)
// and, if any, a user that exists; no other entry reaches client-go.
//
// The server must be an https URL whose port, if given, is in 1–65535,
// with no userinfo, query or fragment.
//
// Its error matches ErrInvalidKubeconfig (and ErrKubeconfigRefused for a
// refusal), names fields only, and never contains any of data: parser
// messages can quote the input, so they are not passed on.
func ParseKubeconfigWith(data []byte, policy KubeconfigPolicy) (*rest.Config, error) {
	return kubeconfigpolicy.Parse(data, kubeconfigpolicy.Policy(policy))
}
