package kube

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/internal/faultproxy"
	"github.com/clusterpool/clusterpool/internal/incluster"
)

// With InCluster, a dial switches to the in-cluster endpoint exactly when
// the workload cluster holds this controller's Pod with its UID. The
// workload apiserver is reached from outside through a fault proxy, and
// "in-cluster" directly: once switched, the cluster's clients work with the
// proxy refusing everything.
func TestInClusterSwitch(t *testing.T) {
	needEnvtest(t)
	const ns = "controller-system"
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "controller"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "example.invalid/manager"}}}}
	workObjects(t, ns, pod)
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, workCfg.CAData, 0o600); err != nil {
		t.Fatal(err)
	}
	proxy := workProxy(t)
	key := client.ObjectKey{Namespace: "fleet", Name: "in-cluster"}
	putKubeconfig(t, key, kubeconfig(t, proxy.Addr(), ""))
	outside := "https://" + proxy.Addr()

	for _, tc := range []struct {
		name          string
		podNS, podUID string
		wantHost      string
	}{
		{"our Pod", ns, string(pod.UID), workCfg.Host},
		{"another UID", ns, "00000000-0000-0000-0000-000000000000", outside},
		{"no such Pod", "elsewhere", string(pod.UID), outside},
		{"no Pod metadata", "", "", outside},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxy.SetMode(faultproxy.Pass)
			t.Setenv(incluster.EnvPodNamespace, tc.podNS)
			t.Setenv(incluster.EnvPodName, pod.Name)
			t.Setenv(incluster.EnvPodUID, tc.podUID)
			d, err := NewDialer(SecretSource{Reader: mgmt}, DialerOptions{InCluster: true})
			if err != nil {
				t.Fatal(err)
			}
			if d.inCluster != nil {
				d.inCluster.Endpoint = func() (string, string, error) { return workCfg.Host, caFile, nil }
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := d.Dial(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Stop()
			cfg := c.RESTConfig()
			if strings.TrimSuffix(cfg.Host, "/") != strings.TrimSuffix(tc.wantHost, "/") {
				t.Fatalf("host %s, want %s", cfg.Host, tc.wantHost)
			}
			if tc.wantHost == outside {
				return
			}
			if cfg.CAFile != caFile || len(cfg.CAData) != 0 {
				t.Fatalf("CA file %q (data %d bytes), want the in-cluster CA file only", cfg.CAFile, len(cfg.CAData))
			}
			proxy.SetMode(faultproxy.Refuse)
			if err := c.Uncached.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}); err != nil {
				t.Fatalf("Get through the in-cluster endpoint: %v", err)
			}
		})
	}
}
