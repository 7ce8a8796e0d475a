// Package sinkservers finds and runs the real servers the sink tests
// deliver to (redis-server, rabbitmq-server), on free loopback ports
// with their files in temp dirs. A test whose server binary is missing
// skips, naming it, unless ICECDC_REQUIRE_SINK_SERVERS=1 (the interop
// stage), where it fails.
package sinkservers

import (
	"fmt"
	"net"
	"os"
	"os/exec"
)

// Required reports whether a missing server fails the tests
// (ICECDC_REQUIRE_SINK_SERVERS=1).
func Required() bool { return os.Getenv("ICECDC_REQUIRE_SINK_SERVERS") == "1" }

// Find returns the path of the server binary name (a name looked up on
// PATH and in /usr/sbin, or a path), or why it is missing.
func Find(name string) (path, missing string) {
	for _, dir := range []string{"", "/usr/sbin/"} {
		if p, err := exec.LookPath(dir + name); err == nil {
			return p, ""
		}
	}
	return "", fmt.Sprintf("%s not found (on PATH or in /usr/sbin): install it (apt-get install %s) to run these tests against the real server", name, name)
}

// FreePort returns a loopback port nothing listens on now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
