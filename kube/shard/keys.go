package shard

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ListKeys returns a KeyLister that lists the objects of newList's type
// with r (e.g. mgr.GetClient() for clusterv1.ClusterList, or
// mgr.GetAPIReader() with an unstructured list) and returns their keys.
func ListKeys(r client.Reader, newList func() client.ObjectList, opts ...client.ListOption) KeyLister {
	return func(ctx context.Context) ([]client.ObjectKey, error) {
		list := newList()
		if err := r.List(ctx, list, opts...); err != nil {
			return nil, fmt.Errorf("shard: listing clusters: %w", err)
		}
		var keys []client.ObjectKey
		err := meta.EachListItem(list, func(o runtime.Object) error {
			acc, err := meta.Accessor(o)
			if err != nil {
				return err
			}
			keys = append(keys, client.ObjectKey{Namespace: acc.GetNamespace(), Name: acc.GetName()})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("shard: listing clusters: %w", err)
		}
		return keys, nil
	}
}
