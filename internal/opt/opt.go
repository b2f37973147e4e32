package opt

import "fmt"

// Field is one named option value, for FirstNegative.
type Field struct {
	Name     string
	Value    any
	Negative bool
}

// F describes a numeric field.
func F[T ~int | ~int64 | ~float32 | ~float64](name string, v T) Field {
	return Field{Name: name, Value: v, Negative: v < 0}
}

// FirstNegative returns "<prefix>Name=value must not be negative" for the
// first negative field, or nil.
func FirstNegative(prefix string, fields ...Field) error {
	for _, f := range fields {
		if f.Negative {
			return fmt.Errorf("%s%s=%v must not be negative", prefix, f.Name, f.Value)
		}
	}
	return nil
}

// Default sets *v to d when *v is the zero value.
func Default[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}
