package kube_test

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/clusterpool/clusterpool/kube"
	"github.com/clusterpool/clusterpool/pool"
)

// A pool set up as Cluster API's ClusterCache: a dialer with its cache and
// client options, an Admission over the Cluster objects (read unstructured,
// so that kube needs no Cluster API import) that connects provisioned
// Clusters and removes deleted ones, and a SecretWatcher that picks up
// rotated kubeconfigs of admitted clusters only.
func ExampleAdmission() {
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err != nil {
		panic(err)
	}
	d, err := kube.NewDialer(kube.SecretSource{Reader: mgr.GetClient()}, kube.DialerOptions{
		UserAgent:          "cluster-api-controller-manager/v1.14.2",
		DisableFor:         []client.Object{&corev1.Pod{}, &corev1.Secret{}},
		Unstructured:       true,
		Indexes:            []kube.Index{{Object: &corev1.Node{}, Field: "spec.providerID", Extract: providerID}},
		InitialSyncTimeout: 5 * time.Minute,
		InCluster:          true,
	})
	if err != nil {
		panic(err)
	}
	p, err := kube.NewPool(d, pool.Options[client.ObjectKey, *kube.Cluster]{})
	if err != nil {
		panic(err)
	}
	cluster := &unstructured.Unstructured{}
	cluster.SetGroupVersionKind(schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Cluster"})
	adm := &kube.Admission{Pool: p, Object: cluster, Connect: true, Admit: func(obj client.Object) bool {
		ok, _, _ := unstructured.NestedBool(obj.(*unstructured.Unstructured).Object,
			"status", "initialization", "infrastructureProvisioned")
		return ok
	}}
	if err := adm.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: 10}); err != nil {
		panic(err)
	}
	if err := mgr.Add(&kube.SecretWatcher{Informers: mgr.GetCache(), Pool: p, Admit: adm.Admitted}); err != nil {
		panic(err)
	}
	// Then mgr.Start, and controllers that read adm.Admitted before p.Peek.
}

// providerID indexes Nodes by spec.providerID, as Cluster API's
// NodeProviderIDIndex does.
func providerID(obj client.Object) []string {
	if n, ok := obj.(*corev1.Node); ok && n.Spec.ProviderID != "" {
		return []string{n.Spec.ProviderID}
	}
	return nil
}
