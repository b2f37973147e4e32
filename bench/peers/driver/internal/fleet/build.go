package fleet

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

// BuildPeer builds peer name with bench/peers/build.sh (a no-op when its
// binary is cached) and returns the binary's path.
func BuildPeer(ctx context.Context, root, name string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "bench/peers/build.sh"), name)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building peer %s: %w", name, err)
	}
	return strings.TrimSpace(out.String()), nil
}

// BuildPeers builds s's strategies (the -peer ones are given) and returns
// their binaries by name.
func BuildPeers(ctx context.Context, s *Shared) (map[string]string, error) {
	bins := map[string]string{}
	for _, name := range s.Strategies {
		if bin, ok := s.Extra[name]; ok {
			bins[name] = bin
			continue
		}
		bin, err := BuildPeer(ctx, s.Root, name)
		if err != nil {
			return nil, err
		}
		bins[name] = bin
	}
	return bins, nil
}

// RepoRoot is the nearest directory above the working directory holding
// bench/peers/build.sh.
func RepoRoot() (string, error) {
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

// CAPIPeer builds the Cluster API peer (bench/peers/capi) and returns its
// binary and the directory of Cluster API's module (its CRDs).
func CAPIPeer(ctx context.Context, root string) (bin, capiDir string, err error) {
	if bin, err = BuildPeer(ctx, root, "capi"); err != nil {
		return "", "", err
	}
	if capiDir, err = ModuleDir(ctx, CAPIModule); err != nil {
		return "", "", err
	}
	return bin, capiDir, nil
}
