package bench

import (
	"context"
	"errors"
	"testing"
)

// The model must behave like ClusterCacheTracker: a second caller during a
// client creation is refused at once, and a failure is not remembered.
func TestCCTModel(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	dials := 0
	fail := true
	cct := NewCCT(func(ctx context.Context, key string) (*client, error) {
		dials++
		entered <- struct{}{}
		<-release
		if fail {
			return nil, errRefused
		}
		return &client{key: key}, nil
	})
	first := make(chan error)
	go func() { _, err := cct.Get(context.Background(), "a"); first <- err }()
	<-entered
	if _, err := cct.Get(context.Background(), "a"); !errors.Is(err, ErrClusterLocked) {
		t.Fatalf("second caller during creation: %v, want ErrClusterLocked", err)
	}
	release <- struct{}{}
	if err := <-first; !errors.Is(err, errRefused) {
		t.Fatalf("winner: %v", err)
	}
	fail = false
	go func() { _, err := cct.Get(context.Background(), "a"); first <- err }()
	<-entered // dials again: no memory of the failure
	release <- struct{}{}
	if err := <-first; err != nil || dials != 2 {
		t.Fatalf("second attempt: %v after %d dials", err, dials)
	}
	if c, err := cct.Get(context.Background(), "a"); err != nil || c.key != "a" || dials != 2 {
		t.Fatalf("hit: %v %v dials=%d", c, err, dials)
	}
}
