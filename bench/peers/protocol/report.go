package protocol

import (
	"encoding/json"
	"fmt"
	"os"
)

// ReadReport decodes the JSON file into v: a report the driver wrote with
// -json, read back by bench/plot and by the driver's runs from a file
// (-model-from, -scale-from, -mhc-from, -chaos-from). An error decoding
// names the file.
func ReadReport(file string, v any) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}
