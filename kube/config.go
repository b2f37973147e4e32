package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
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
// is missing its key, does not parse, or is refused by its
// KubeconfigPolicy (then ErrKubeconfigRefused matches too). The error
// names the Secret and the offending field, never the content.
var ErrInvalidKubeconfig = errors.New("kube: invalid kubeconfig")

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
	// second, burst 10), which in bench/peers spread the first connects of
	// 32 clusters over 5.8 s instead of 0.1 s.
	Reader client.Reader
	// Policy is what a kubeconfig may use beyond inline data; the zero
	// value allows nothing (see KubeconfigPolicy).
	Policy KubeconfigPolicy
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
func ParseKubeconfigWith(data []byte, policy KubeconfigPolicy) (cfg *rest.Config, err error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrInvalidKubeconfig)
	}
	defer func() {
		if r := recover(); r != nil { // a parser bug must not take the controller down
			cfg, err = nil, fmt.Errorf("%w: parser failed", ErrInvalidKubeconfig)
		}
	}()
	raw, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("%w: does not parse", ErrInvalidKubeconfig)
	}
	if err := policy.check(kubeconfigUses(raw)); err != nil {
		return nil, err
	}
	current, err := currentOnly(raw)
	if err != nil {
		return nil, err
	}
	// No ConfigAccess: nothing is ever persisted (an auth-provider would
	// otherwise write tokens to the controller's own kubeconfig file).
	cfg, err = clientcmd.NewNonInteractiveClientConfig(*current, current.CurrentContext,
		&clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("%w: current context is not usable", ErrInvalidKubeconfig)
	}
	if err := policy.check(restUses(cfg)); err != nil {
		return nil, err
	}
	return cfg, nil
}

// checkServer refuses a server URL that is not an absolute http(s) URL
// with a host, whose port (if given) is not in 1–65535, or that carries
// userinfo, a query or a fragment: credentials belong in the user entry
// (Go's HTTP client would send userinfo as basic auth, and errors quote
// URLs), and client-go drops a query from its requests anyway. The error
// names the part, never the value.
func checkServer(server string) error {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("%w: server is not an https URL", ErrInvalidKubeconfig)
	}
	if u.User != nil {
		return fmt.Errorf("%w: server carries userinfo (put credentials in the user entry)", ErrInvalidKubeconfig)
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return fmt.Errorf("%w: server carries a query or a fragment", ErrInvalidKubeconfig)
	}
	if !validPort(u) {
		return fmt.Errorf("%w: server port is not in 1-65535", ErrInvalidKubeconfig)
	}
	return nil
}

// validPort reports whether u has no port, or one in 1–65535 (url.Parse
// takes any digits, and an empty port after the colon).
func validPort(u *url.URL) bool {
	if u.Port() == "" {
		return !strings.HasSuffix(u.Host, ":")
	}
	port, err := strconv.Atoi(u.Port())
	return err == nil && port >= 1 && port <= 65535
}

// currentOnly returns a kubeconfig holding only raw's current context, its
// cluster and its user, under fixed names, so that no other entry (and no
// default of client-go's, such as $KUBERNETES_MASTER) can be used.
func currentOnly(raw *clientcmdapi.Config) (*clientcmdapi.Config, error) {
	kctx, ok := raw.Contexts[raw.CurrentContext]
	if raw.CurrentContext == "" || !ok || kctx == nil {
		return nil, fmt.Errorf("%w: current-context names no context", ErrInvalidKubeconfig)
	}
	cluster, ok := raw.Clusters[kctx.Cluster]
	if !ok || cluster == nil {
		return nil, fmt.Errorf("%w: current context names no cluster", ErrInvalidKubeconfig)
	}
	if cluster.Server == "" {
		return nil, fmt.Errorf("%w: no server", ErrInvalidKubeconfig)
	}
	if err := checkServer(cluster.Server); err != nil {
		return nil, err
	}
	// A user named "" is a user like any other (client-go keeps its
	// credentials; Cluster API's FromEnvTestConfig writes one); a context
	// naming a user that is not there is an error.
	user := clientcmdapi.NewAuthInfo()
	if u, ok := raw.AuthInfos[kctx.AuthInfo]; ok && u != nil {
		user = u
	} else if kctx.AuthInfo != "" {
		return nil, fmt.Errorf("%w: current context names no user", ErrInvalidKubeconfig)
	}
	out := clientcmdapi.NewConfig()
	out.Clusters["cluster"] = cluster
	out.AuthInfos["user"] = user
	out.Contexts["current"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "user", Namespace: kctx.Namespace}
	out.CurrentContext = "current"
	return out, nil
}
