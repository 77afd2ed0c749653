//go:build wasip1

package main

// runCommand: the module is a reactor; Envoy never runs main.
func runCommand() {}

// describeJSONError is the scanner's message, which ends with the byte offset (check_native.go adds the line
// and column for check-config; here they would only grow the module).
func describeJSONError(_ []byte, _ int, err error) string { return err.Error() }
