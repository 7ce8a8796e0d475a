//go:build !linux

package moto

import "os/exec"

// dieWithParent does nothing where the system cannot tie a child's life
// to its parent's: t.Cleanup stops the server.
func dieWithParent(*exec.Cmd) {}
