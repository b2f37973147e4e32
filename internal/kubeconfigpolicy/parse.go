package kubeconfigpolicy

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Sentinel errors, matched with errors.Is; kube re-exports them as
// ErrInvalidKubeconfig and ErrKubeconfigRefused.
var (
	// ErrInvalid: the kubeconfig is empty, does not parse, or is refused.
	ErrInvalid = errors.New("kube: invalid kubeconfig")
	// ErrRefused: the kubeconfig uses a capability its Policy does not
	// allow; ErrInvalid matches too.
	ErrRefused = fmt.Errorf("%w: refused by policy", ErrInvalid)
)

// Parse turns kubeconfig bytes into a REST config (see
// kube.ParseKubeconfigWith). Its error matches ErrInvalid (and ErrRefused
// for a refusal) and never contains any of data: parser messages can quote
// the input, so they are not passed on.
func Parse(data []byte, policy Policy) (cfg *rest.Config, err error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrInvalid)
	}
	defer func() {
		if r := recover(); r != nil { // a parser bug must not take the controller down
			cfg, err = nil, fmt.Errorf("%w: parser failed", ErrInvalid)
		}
	}()
	raw, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("%w: does not parse", ErrInvalid)
	}
	if err := policy.Check(kubeconfigUses(raw)); err != nil {
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
		return nil, fmt.Errorf("%w: current context is not usable", ErrInvalid)
	}
	if err := policy.Check(RESTUses(cfg)); err != nil {
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
		return fmt.Errorf("%w: server is not an https URL", ErrInvalid)
	}
	if u.User != nil {
		return fmt.Errorf("%w: server carries userinfo (put credentials in the user entry)", ErrInvalid)
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return fmt.Errorf("%w: server carries a query or a fragment", ErrInvalid)
	}
	if !validPort(u) {
		return fmt.Errorf("%w: server port is not in 1-65535", ErrInvalid)
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
		return nil, fmt.Errorf("%w: current-context names no context", ErrInvalid)
	}
	cluster, ok := raw.Clusters[kctx.Cluster]
	if !ok || cluster == nil {
		return nil, fmt.Errorf("%w: current context names no cluster", ErrInvalid)
	}
	if cluster.Server == "" {
		return nil, fmt.Errorf("%w: no server", ErrInvalid)
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
		return nil, fmt.Errorf("%w: current context names no user", ErrInvalid)
	}
	out := clientcmdapi.NewConfig()
	out.Clusters["cluster"] = cluster
	out.AuthInfos["user"] = user
	out.Contexts["current"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "user", Namespace: kctx.Namespace}
	out.CurrentContext = "current"
	return out, nil
}
