package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// buildPeer builds peer name with bench/peers/build.sh (a no-op when its
// binary is cached) and returns the binary's path.
func buildPeer(ctx context.Context, root, name string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "bench/peers/build.sh"), name)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building peer %s: %w", name, err)
	}
	return strings.TrimSpace(out.String()), nil
}

// repoRoot is the nearest directory above the working directory holding
// bench/peers/build.sh.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "bench/peers/build.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("driver: bench/peers/build.sh not found above the working directory")
		}
		dir = parent
	}
}

// capiPeer builds the Cluster API peer (bench/peers/capi) and returns its
// binary and the directory of Cluster API's module (its CRDs).
func capiPeer(ctx context.Context, root string) (bin, capiDir string, err error) {
	if bin, err = buildPeer(ctx, root, "capi"); err != nil {
		return "", "", err
	}
	if capiDir, err = moduleDir(ctx, capiModule); err != nil {
		return "", "", err
	}
	return bin, capiDir, nil
}
