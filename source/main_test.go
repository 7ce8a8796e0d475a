//go:build unix

package source_test

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	cleanupLatency()
	os.Exit(code)
}
