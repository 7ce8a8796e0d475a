package moto

import (
	"os/exec"
	"syscall"
)

// dieWithParent kills the server when the test binary dies without
// cleaning up (a timeout, a kill): no server outlives its tests.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
