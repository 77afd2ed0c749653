//go:build wasip1

package main

// runCommand: the module is a reactor; Envoy never runs main.
func runCommand() {}
