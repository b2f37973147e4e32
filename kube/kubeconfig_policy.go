package kube

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeconfigPolicy says which dangerous capabilities a kubeconfig read from
// a Secret may use. A kubeconfig Secret is untrusted input: whoever may
// write Secrets in a watched namespace writes it, and the controller that
// parses it runs with its own identity, files and network position (the
// class of Flux's CVE-2022-24817).
//
// The zero value is the safe default and allows nothing beyond inline data:
// an https server, certificate-authority-data, tls-server-name,
// disable-compression, and a token, client-certificate-data with
// client-key-data, or username and password. Each field re-enables exactly
// one capability; every one of them is DANGEROUS with Secrets that someone
// other than the controller's operator can write.
//
// Invariants: the policy is checked against every cluster, user and
// context of the kubeconfig, not only those the current context names
// (dangerous fields are refused anywhere in the file), before any
// client-go code interprets the config; then only the current context's
// cluster and user reach client-go, and the REST config it returns is
// checked again.
type KubeconfigPolicy struct {
	// AllowExec lets users[].user.exec run a credential plugin: a command
	// of the controller's machine, with the controller's environment,
	// named by the Secret. It also allows the cmd-* keys of an
	// auth-provider's config (which additionally needs AllowAuthProvider).
	// DANGEROUS: whoever writes the Secret runs code in the controller.
	AllowExec bool
	// AllowAuthProvider lets users[].user.auth-provider select one of the
	// auth-provider plugins compiled into the program, with the Secret's
	// configuration. DANGEROUS: what a plugin does (call an identity
	// provider named in the Secret, run a command) is up to the plugin.
	AllowAuthProvider bool
	// AllowFileReferences lets the kubeconfig name files of the
	// controller's machine: users[].user.tokenFile, client-certificate and
	// client-key, clusters[].cluster.certificate-authority. DANGEROUS: the
	// Secret can make the controller send its own service-account token,
	// or any file it can read, to the server the Secret names.
	AllowFileReferences bool
	// AllowInsecureTLS allows clusters[].cluster.insecure-skip-tls-verify
	// and plain http:// servers. DANGEROUS: the connection can be
	// intercepted and the credentials in the Secret read on the way.
	AllowInsecureTLS bool
	// AllowProxy allows clusters[].cluster.proxy-url: the controller then
	// connects to a proxy the Secret names (http, https or socks5) instead
	// of the server. DANGEROUS: it reaches addresses of the controller's
	// network through a path the operator did not configure. Without it
	// the process's usual proxy variables apply.
	AllowProxy bool
	// AllowImpersonation allows users[].user.as, as-uid, as-groups and
	// as-user-extra (kubectl's --as flags). DANGEROUS: requests then run as
	// an identity the Secret chooses, as far as its credentials may
	// impersonate.
	AllowImpersonation bool
}

// ErrKubeconfigRefused is matched, along with ErrInvalidKubeconfig, by the
// error of a kubeconfig that uses a capability its KubeconfigPolicy does
// not allow. The error names every refused field and the policy field that
// would allow it, never a value or an entry's name.
var ErrKubeconfigRefused = fmt.Errorf("%w: refused by policy", ErrInvalidKubeconfig)

// capability is one dangerous thing a kubeconfig can ask for.
type capability int

const (
	capExec capability = iota
	capAuthProvider
	capFiles
	capInsecureTLS
	capProxy
	capImpersonation
)

// option is the KubeconfigPolicy field that allows c.
func (c capability) option() string {
	return [...]string{"AllowExec", "AllowAuthProvider", "AllowFileReferences", "AllowInsecureTLS",
		"AllowProxy", "AllowImpersonation"}[c]
}

// allows reports whether p allows c.
func (p KubeconfigPolicy) allows(c capability) bool {
	return [...]bool{p.AllowExec, p.AllowAuthProvider, p.AllowFileReferences, p.AllowInsecureTLS,
		p.AllowProxy, p.AllowImpersonation}[c]
}

// use is a field of a kubeconfig (or of the REST config built from it) that
// needs a capability. field is a path of field names only, never a value.
type use struct {
	field string
	needs capability
}

// set returns the use when on is true, for the table-like functions below.
func set(on bool, field string, needs capability) []use {
	if on {
		return []use{{field, needs}}
	}
	return nil
}

// clusterUses lists the capabilities a kubeconfig cluster entry needs.
func clusterUses(c *clientcmdapi.Cluster) []use {
	return slices.Concat(
		set(c.InsecureSkipTLSVerify, "clusters[].cluster.insecure-skip-tls-verify", capInsecureTLS),
		set(strings.HasPrefix(strings.ToLower(c.Server), "http://"), "clusters[].cluster.server (plain http)", capInsecureTLS),
		set(c.CertificateAuthority != "", "clusters[].cluster.certificate-authority", capFiles),
		set(c.ProxyURL != "", "clusters[].cluster.proxy-url", capProxy),
	)
}

// userUses lists the capabilities a kubeconfig user entry needs.
func userUses(u *clientcmdapi.AuthInfo) []use {
	uses := slices.Concat(
		set(u.Exec != nil, "users[].user.exec", capExec),
		set(u.AuthProvider != nil, "users[].user.auth-provider", capAuthProvider),
		set(u.TokenFile != "", "users[].user.tokenFile", capFiles),
		set(u.ClientCertificate != "", "users[].user.client-certificate", capFiles),
		set(u.ClientKey != "", "users[].user.client-key", capFiles),
		set(u.Impersonate != "", "users[].user.as", capImpersonation),
		set(u.ImpersonateUID != "", "users[].user.as-uid", capImpersonation),
		set(len(u.ImpersonateGroups) > 0, "users[].user.as-groups", capImpersonation),
		set(len(u.ImpersonateUserExtra) > 0, "users[].user.as-user-extra", capImpersonation),
	)
	if u.AuthProvider != nil {
		for k := range u.AuthProvider.Config {
			if strings.HasPrefix(strings.ToLower(k), "cmd") { // gcp-style cmd-path, cmd-args
				uses = append(uses, use{"users[].user.auth-provider.config.cmd-*", capExec})
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
func kubeconfigUses(cfg *clientcmdapi.Config) []use {
	var uses []use
	for _, c := range cfg.Clusters {
		uses = append(uses, clusterUses(c)...)
	}
	for _, u := range cfg.AuthInfos {
		uses = append(uses, userUses(u)...)
	}
	return uses
}

// restUses lists the capabilities a REST config needs: the last check
// before a client can exist, should client-go ever derive one of these
// fields from something kubeconfigUses did not look at.
func restUses(c *rest.Config) []use {
	u, err := url.Parse(c.Host)
	return slices.Concat(
		set(c.ExecProvider != nil, "rest.Config.ExecProvider", capExec),
		set(c.AuthProvider != nil, "rest.Config.AuthProvider", capAuthProvider),
		set(c.BearerTokenFile != "", "rest.Config.BearerTokenFile", capFiles),
		set(c.CAFile != "" || c.CertFile != "" || c.KeyFile != "", "rest.Config.TLSClientConfig files", capFiles),
		set(c.Insecure, "rest.Config.Insecure", capInsecureTLS),
		set(err != nil || u.Scheme != "https", "rest.Config.Host (not https)", capInsecureTLS),
		set(c.Proxy != nil, "rest.Config.Proxy", capProxy),
		set(c.Impersonate.UserName != "" || c.Impersonate.UID != "" || len(c.Impersonate.Groups) > 0 ||
			len(c.Impersonate.Extra) > 0, "rest.Config.Impersonate", capImpersonation),
	)
}

// check returns an error matching ErrKubeconfigRefused that names every
// field of uses p does not allow (each once, in order), or nil.
func (p KubeconfigPolicy) check(uses []use) error {
	var refused []string
	for _, u := range uses {
		msg := u.field + " needs KubeconfigPolicy." + u.needs.option()
		if !p.allows(u.needs) && !slices.Contains(refused, msg) {
			refused = append(refused, msg)
		}
	}
	if len(refused) == 0 {
		return nil
	}
	slices.Sort(refused) // map order must not change the message
	return fmt.Errorf("%w: %s", ErrKubeconfigRefused, strings.Join(refused, "; "))
}
