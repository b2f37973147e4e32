// Package incluster tells whether a workload cluster runs this controller's
// Pod, and gives the in-cluster endpoint that then reaches it, as Cluster
// API's ClusterCache does (cluster_accessor_client.go:76-107). kube's
// DialerOptions.InCluster is its user.
package incluster
