// Package rotation is `make bench-rotation` (the driver's -rotation):
// every Cluster's kubeconfig Secret gets a new bearer token on a schedule
// (-rotate-every, -rotations), and the token it replaced is revoked
// -revoke-after later by the token webhook the driver serves on 127.0.0.1
// (fleet.Authenticator). The workload apiservers write audit logs, from
// which relists, 401s and new connections are counted.
//
// Reading the report: one table over all peers, then each peer rotation by
// rotation — relists (LIST or watch-list at the workload apiservers),
// requests refused with 401, new connections, seconds a cluster was not
// connected and reconciles that failed, per rotation window; a peer that
// follows the Secret without relisting shows no relists and little time
// not connected. "Relisted:" names the paths that were listed again.
package rotation
