package idle

import (
	"fmt"
	"os"
	"strings"
)

// FlagValue returns v, or, if v is "@FILE", the contents of FILE (without
// surrounding space): the driver passes a value longer than one argument
// may be (128 KiB on Linux), such as -roles of 10,000 clusters, in a file.
func FlagValue(v string) (string, error) {
	file, ok := strings.CutPrefix(v, "@")
	if !ok {
		return v, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("reading the flag value in %s: %w", file, err)
	}
	return strings.TrimSpace(string(data)), nil
}
