// Command icecdc captures row-level changes of Apache Iceberg v3 tables.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
)

// version is the icecdc version reported in event envelopes.
var version = "0.1.0-dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command; it returns the process exit code and prints
// any error as one line on stderr.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// After the first signal, restore the default handling: a second
		// signal ends the process at once.
		<-ctx.Done()
		stop()
	}()
	if path := os.Getenv("ICECDC_CPUPROFILE"); path != "" {
		// A CPU profile of the whole command, for `go tool pprof`.
		f, err := os.Create(path)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(stderr, "icecdc: ICECDC_CPUPROFILE %s: %v\n", path, err)
			return 1
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}

	if path := os.Getenv("ICECDC_HEAPPROFILE"); path != "" {
		// A heap profile at the command's end (after a collection: what
		// is still in use then, and what was allocated over the run), and
		// one at each SIGUSR1, to PATH.1, PATH.2, ...: a running daemon's.
		usr1, done := make(chan os.Signal, 1), make(chan struct{})
		signal.Notify(usr1, syscall.SIGUSR1)
		defer func() { signal.Stop(usr1); close(done) }()
		go func() {
			for n := 1; ; n++ {
				select {
				case <-usr1:
					writeHeapProfile(fmt.Sprintf("%s.%d", path, n), stderr)
				case <-done:
					return
				}
			}
		}()
		defer writeHeapProfile(path, stderr)
	}

	err := execute(ctx, args, stdout, stderr)
	var ue *usageError
	var ee *exitError
	switch {
	case errors.As(err, &ue):
		if msg := ue.Error(); msg != "" {
			fmt.Fprintln(stderr, "icecdc:", oneLine(msg))
		}
		return 2
	case errors.As(err, &ee):
		fmt.Fprintln(stderr, "icecdc:", oneLine(ee.Error()))
		return ee.code
	case err != nil:
		fmt.Fprintln(stderr, "icecdc:", oneLine(err.Error()))
		return 1
	}
	return 0
}

// writeHeapProfile writes a heap profile after a collection.
func writeHeapProfile(path string, stderr io.Writer) {
	runtime.GC()
	f, err := os.Create(path)
	if err == nil {
		err = errors.Join(pprof.WriteHeapProfile(f), f.Close())
	}
	if err != nil {
		fmt.Fprintf(stderr, "icecdc: ICECDC_HEAPPROFILE %s: %v\n", path, err)
	}
}

// oneLine keeps an error on one line: some library errors span several.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// propsFlag is a repeatable k=v flag.
type propsFlag map[string]string

func (p propsFlag) String() string { return "" }

func (p propsFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", v)
	}
	p[k] = val
	return nil
}

func (p propsFlag) Type() string { return "key=value" }
