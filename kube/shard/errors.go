package shard

import "errors"

// ErrInvalidOptions is matched (errors.Is) by the error New returns for
// invalid options; the message names the field.
var ErrInvalidOptions = errors.New("shard: invalid options")

// ErrNotOwned is matched by the error a Getter returns for a cluster this
// replica does not own right now. It carries no retry hint
// (pool.RetryAfter reports false): the owning replica reconciles the
// cluster, and a Gained event enqueues it here if it ever moves here.
var ErrNotOwned = errors.New("shard: cluster not owned by this replica")
