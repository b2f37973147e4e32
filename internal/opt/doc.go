// Package opt holds the two steps every options struct of the project
// takes: report the first negative field by name, and fill zero fields
// with their documented defaults.
package opt
