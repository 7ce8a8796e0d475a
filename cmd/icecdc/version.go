package main

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// buildDate is the time of a release build, which its build command
// stamps (-ldflags '-X main.buildDate=2026-12-06T05:00:00Z'; see
// docs/operations.md): the toolchain records the commit's time, not the
// build's. Empty in other builds.
var buildDate = ""

// versionLine is what icecdc version and --version print: the version,
// then what the Go toolchain stamped into the binary: the VCS commit
// (-dirty when the tree had local changes) and its time, which a build
// from a clone carries and go test binaries, go run and -buildvcs=false
// builds lack, and the Go version and platform, which every binary has.
func versionLine(bi *debug.BuildInfo) string {
	var rev, when string
	dirty := false
	goVersion := runtime.Version()
	if bi != nil {
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	var parts []string
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if dirty {
			rev += "-dirty"
		}
		if when != "" {
			rev += " of " + when
		}
		parts = append(parts, "commit "+rev)
	}
	if buildDate != "" {
		parts = append(parts, "built "+buildDate)
	}
	parts = append(parts, goVersion+" "+runtime.GOOS+"/"+runtime.GOARCH)
	return "icecdc " + version + " (" + strings.Join(parts, ", ") + ")"
}

// buildVersionLine is versionLine of this binary.
func buildVersionLine() string {
	bi, _ := debug.ReadBuildInfo()
	return versionLine(bi)
}
