// Package crdgen is a module of its own for controller-gen (make crds), so
// that the tool's dependencies stay out of examples/capi's build list.
package crdgen

import _ "sigs.k8s.io/cluster-api/api/core/v1beta2" // the types make crds generates from
