package kubeconfigpolicy

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Policy is kube.KubeconfigPolicy, field for field (kube converts one to the
// other): each field allows one Capability. The zero value allows none.
type Policy struct {
	AllowExec           bool // users[].user.exec, auth-provider cmd-*
	AllowAuthProvider   bool // users[].user.auth-provider
	AllowFileReferences bool // tokenFile, client-certificate, client-key, certificate-authority
	AllowInsecureTLS    bool // insecure-skip-tls-verify, http:// servers
	AllowProxy          bool // clusters[].cluster.proxy-url
	AllowImpersonation  bool // as, as-uid, as-groups, as-user-extra
}

// Capability is one dangerous thing a kubeconfig can ask for.
type Capability int

// The capabilities, each allowed by the Policy field Option names.
const (
	Exec Capability = iota
	AuthProvider
	Files
	InsecureTLS
	Proxy
	Impersonation
)

// Option is the Policy (and kube.KubeconfigPolicy) field that allows c.
func (c Capability) Option() string {
	return [...]string{"AllowExec", "AllowAuthProvider", "AllowFileReferences", "AllowInsecureTLS",
		"AllowProxy", "AllowImpersonation"}[c]
}

// Allows reports whether p allows c.
func (p Policy) Allows(c Capability) bool {
	return [...]bool{p.AllowExec, p.AllowAuthProvider, p.AllowFileReferences, p.AllowInsecureTLS,
		p.AllowProxy, p.AllowImpersonation}[c]
}

// Use is a field of a kubeconfig (or of the REST config built from it)
// that needs a capability. Field is a path of field names only, never a
// value.
type Use struct {
	Field string
	Needs Capability
}

// set returns the use when on is true, for the table-like functions below.
func set(on bool, field string, needs Capability) []Use {
	if on {
		return []Use{{field, needs}}
	}
	return nil
}

// clusterUses lists the capabilities a kubeconfig cluster entry needs.
func clusterUses(c *clientcmdapi.Cluster) []Use {
	return slices.Concat(
		set(c.InsecureSkipTLSVerify, "clusters[].cluster.insecure-skip-tls-verify", InsecureTLS),
		set(strings.HasPrefix(strings.ToLower(c.Server), "http://"), "clusters[].cluster.server (plain http)", InsecureTLS),
		set(c.CertificateAuthority != "", "clusters[].cluster.certificate-authority", Files),
		set(c.ProxyURL != "", "clusters[].cluster.proxy-url", Proxy),
	)
}

// userUses lists the capabilities a kubeconfig user entry needs.
func userUses(u *clientcmdapi.AuthInfo) []Use {
	uses := slices.Concat(
		set(u.Exec != nil, "users[].user.exec", Exec),
		set(u.AuthProvider != nil, "users[].user.auth-provider", AuthProvider),
		set(u.TokenFile != "", "users[].user.tokenFile", Files),
		set(u.ClientCertificate != "", "users[].user.client-certificate", Files),
		set(u.ClientKey != "", "users[].user.client-key", Files),
		set(u.Impersonate != "", "users[].user.as", Impersonation),
		set(u.ImpersonateUID != "", "users[].user.as-uid", Impersonation),
		set(len(u.ImpersonateGroups) > 0, "users[].user.as-groups", Impersonation),
		set(len(u.ImpersonateUserExtra) > 0, "users[].user.as-user-extra", Impersonation),
	)
	if u.AuthProvider != nil {
		for k := range u.AuthProvider.Config {
			if strings.HasPrefix(strings.ToLower(k), "cmd") { // gcp-style cmd-path, cmd-args
				uses = append(uses, Use{"users[].user.auth-provider.config.cmd-*", Exec})
				break
			}
		}
	}
	return uses
}

// kubeconfigUses lists the capabilities every cluster and user entry of cfg
// needs. Contexts, preferences and extensions need none: client-go only
// passes a cluster's "client.authentication.k8s.io/exec" extension to an
// exec plugin, which needs AllowExec.
func kubeconfigUses(cfg *clientcmdapi.Config) []Use {
	var uses []Use
	for _, c := range cfg.Clusters {
		uses = append(uses, clusterUses(c)...)
	}
	for _, u := range cfg.AuthInfos {
		uses = append(uses, userUses(u)...)
	}
	return uses
}

// RESTUses lists the capabilities a REST config needs: the last check
// before a client can exist, should client-go ever derive one of these
// fields from something kubeconfigUses did not look at.
func RESTUses(c *rest.Config) []Use {
	u, err := url.Parse(c.Host)
	return slices.Concat(
		set(c.ExecProvider != nil, "rest.Config.ExecProvider", Exec),
		set(c.AuthProvider != nil, "rest.Config.AuthProvider", AuthProvider),
		set(c.BearerTokenFile != "", "rest.Config.BearerTokenFile", Files),
		set(c.CAFile != "" || c.CertFile != "" || c.KeyFile != "", "rest.Config.TLSClientConfig files", Files),
		set(c.Insecure, "rest.Config.Insecure", InsecureTLS),
		set(err != nil || u.Scheme != "https", "rest.Config.Host (not https)", InsecureTLS),
		set(c.Proxy != nil, "rest.Config.Proxy", Proxy),
		set(c.Impersonate.UserName != "" || c.Impersonate.UID != "" || len(c.Impersonate.Groups) > 0 ||
			len(c.Impersonate.Extra) > 0, "rest.Config.Impersonate", Impersonation),
	)
}

// Check returns an error matching ErrRefused that names every field of
// uses p does not allow (each once, in order), or nil.
func (p Policy) Check(uses []Use) error {
	var refused []string
	for _, u := range uses {
		msg := u.Field + " needs KubeconfigPolicy." + u.Needs.Option()
		if !p.Allows(u.Needs) && !slices.Contains(refused, msg) {
			refused = append(refused, msg)
		}
	}
	if len(refused) == 0 {
		return nil
	}
	slices.Sort(refused) // map order must not change the message
	return fmt.Errorf("%w: %s", ErrRefused, strings.Join(refused, "; "))
}
