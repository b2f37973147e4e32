package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// clientGoVersion is the client-go this module requires.
const clientGoVersion = "client-go v0.37.2"

// requestTimeout bounds each write, as the peers' 10 s REST timeout does;
// the http.Client itself has none, so that the informer's watch shares it.
const requestTimeout = 10 * time.Second

// readKubeconfigs lists the kubeconfig Secrets of namespace once and returns
// each cluster's kubeconfig by cluster name.
func readKubeconfigs(ctx context.Context, cfg *rest.Config, namespace string) (map[string][]byte, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("management client: %w", err)
	}
	list, err := cs.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing kubeconfig Secrets: %w", err)
	}
	out := make(map[string][]byte, len(list.Items))
	for _, s := range list.Items {
		if name, ok := strings.CutSuffix(s.Name, "-kubeconfig"); ok {
			out[name] = s.Data["value"]
		}
	}
	return out, nil
}

// connect builds cluster's one http.Client and clientset, starts its Node
// informer (running until stop is closed), waits for its sync, writes the
// cluster's ConfigMaps once and returns the clientset.
func connect(ctx context.Context, kubeconfig []byte, cluster string, p plan, stop <-chan struct{}) (*kubernetes.Clientset, error) {
	if kubeconfig == nil {
		return nil, fmt.Errorf("no kubeconfig Secret")
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 20, 30
	// A Dial of its own keeps the transport out of client-go's TLS cache:
	// here clusters on one apiserver share credentials and would share a
	// transport, where real clusters each have their own.
	cfg.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "nodes", "", fields.Everything())
	inf := cache.NewSharedIndexInformer(lw, &corev1.Node{}, 0, cache.Indexers{})
	go inf.Run(stop)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("node informer did not sync: %w", ctx.Err())
	}
	for i := range p.objects {
		if err := write(ctx, cs, p.workloadNamespace, fmt.Sprintf("%s-%d", cluster, i)); err != nil {
			return nil, err
		}
	}
	return cs, nil
}

// write reads ConfigMap name (creating it when missing) and updates its
// counter, as the peers' reconciler does.
func write(ctx context.Context, cs *kubernetes.Clientset, namespace, name string) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	cms := cs.CoreV1().ConfigMaps(namespace)
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: map[string]string{"n": "1"}}
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	n, _ := strconv.Atoi(cm.Data["n"])
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data["n"] = strconv.Itoa(n + 1)
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}
