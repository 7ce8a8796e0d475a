package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// composeFile is the part of docker-compose.yml the test reads.
type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Build       any               `yaml:"build"`
		Environment map[string]string `yaml:"environment"`
		Volumes     []string          `yaml:"volumes"`
		DependsOn   map[string]struct {
			Condition string `yaml:"condition"`
		} `yaml:"depends_on"`
		Healthcheck *struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
	} `yaml:"services"`
}

// Docker is not on the machines the tests run on, so the compose file is
// checked for what makes it work: pinned images (for a service that is
// built, every FROM of its Dockerfile), a healthcheck on every service
// another waits for, depends_on with conditions, and an icecdc service
// whose environment fills every ${VAR} of the config it mounts,
// examples/icecdc.compose.yaml (which the interop stage runs for real
// against its loopback servers), with its state on a volume the image's
// user (distroless's nonroot) owns.
func TestComposeFile(t *testing.T) {
	raw, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	dec := yaml.NewDecoder(strings.NewReader(string(raw)))
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	pinned := regexp.MustCompile(`^[a-z0-9./-]+:[0-9][A-Za-z0-9._-]*$`)
	for name, s := range c.Services {
		if s.Build == nil && !pinned.MatchString(s.Image) {
			t.Errorf("service %s: image %q is not pinned to a version tag", name, s.Image)
		}
		if s.Build != nil {
			dockerfile, err := buildDockerfile(s.Build)
			if err != nil {
				t.Errorf("service %s: %v", name, err)
				continue
			}
			raw, err := os.ReadFile(filepath.Join("../..", dockerfile))
			if err != nil {
				t.Errorf("service %s: %v", name, err)
				continue
			}
			for _, err := range unpinnedFroms(string(raw)) {
				t.Errorf("service %s: %s: %v", name, dockerfile, err)
			}
		}
		if len(s.DependsOn) == 0 && name != "kafka" && name != "s3" {
			t.Errorf("service %s waits for nothing", name)
		}
		for dep, d := range s.DependsOn {
			other, ok := c.Services[dep]
			switch {
			case !ok:
				t.Errorf("service %s depends on %s, which is not defined", name, dep)
			case d.Condition == "service_healthy" && (other.Healthcheck == nil || len(other.Healthcheck.Test) == 0):
				t.Errorf("service %s waits for %s to be healthy, which has no healthcheck", name, dep)
			case d.Condition != "service_healthy" && d.Condition != "service_completed_successfully":
				t.Errorf("service %s depends on %s with condition %q", name, dep, d.Condition)
			}
		}
	}
	ic, ok := c.Services["icecdc"]
	if !ok {
		t.Fatal("no icecdc service")
	}
	if ic.Build == nil {
		t.Error("the icecdc service is not built from the Dockerfile")
	}
	const config = "./examples/icecdc.compose.yaml:/etc/icecdc/icecdc.yaml:ro"
	if !slices.Contains(ic.Volumes, config) {
		t.Errorf("icecdc service does not mount %s (volumes %v)", config, ic.Volumes)
	}
	cfgRaw, err := os.ReadFile("../../examples/icecdc.compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := parseConfig(cfgRaw, func(k string) string { return ic.Environment[k] })
	if err != nil {
		t.Fatalf("examples/icecdc.compose.yaml with the icecdc service's environment: %v", err)
	}
	// The endpoints name the compose services.
	for what, v := range map[string]string{
		"catalog.uri": cfg.Catalog.URI, "s3.endpoint": cfg.Catalog.Properties["s3.endpoint"],
		"sink.kafka.brokers": strings.Join(cfg.Sink.Kafka.Brokers, ","),
	} {
		host := strings.Split(strings.TrimPrefix(strings.TrimPrefix(v, "http://"), "https://"), ":")[0]
		if _, ok := c.Services[host]; !ok {
			t.Errorf("%s %q: no service %q in docker-compose.yml", what, v, host)
		}
	}
	if cfg.State.Path != "/var/lib/icecdc/state.db" || !slices.Contains(ic.Volumes, "icecdc-state:/var/lib/icecdc") {
		t.Errorf("the state file %s is not on the icecdc-state volume (volumes %v)", cfg.State.Path, ic.Volumes)
	}
	// The image runs as nonroot (uid 65532): a new named volume takes the
	// owner of the image's directory, which must be that user.
	df, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	owned := regexp.MustCompile(`(?m)^COPY .*--chown=65532:65532 .* /var/lib/icecdc/?$`)
	if !strings.Contains(string(df), "\nUSER 65532:65532\n") || !owned.Match(df) {
		t.Error("Dockerfile: the image does not run as 65532 (nonroot) with /var/lib/icecdc its own")
	}
}

// buildDockerfile returns the Dockerfile a service's build: key names,
// relative to the compose file's directory: build: DIR, or build: {context:
// DIR, dockerfile: FILE} (FILE relative to DIR; default Dockerfile).
func buildDockerfile(build any) (string, error) {
	dir, file := ".", "Dockerfile"
	switch b := build.(type) {
	case string:
		dir = b
	case map[string]any:
		if v, ok := b["context"].(string); ok {
			dir = v
		}
		if v, ok := b["dockerfile"].(string); ok {
			file = v
		}
		if _, ok := b["dockerfile_inline"]; ok {
			return "", errors.New("build: dockerfile_inline is not checked: use a Dockerfile")
		}
	default:
		return "", fmt.Errorf("build: %v: want a directory or {context, dockerfile}", build)
	}
	if strings.Contains(dir, "://") || strings.HasPrefix(dir, "git@") {
		return "", fmt.Errorf("build: context %s is remote: its Dockerfile cannot be checked", dir)
	}
	return filepath.Join(dir, file), nil
}

// unpinnedFroms returns an error for each FROM of a Dockerfile whose image
// has neither a tag nor a digest, or has the tag latest: a build that would
// take whatever the registry holds that day. A FROM naming an earlier
// stage, and scratch, are no image; an image named through a build
// argument cannot be checked and is refused too.
func unpinnedFroms(dockerfile string) []error {
	var errs []error
	stages := map[string]bool{}
	froms := 0
	for i, line := range strings.Split(dockerfile, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.EqualFold(f[0], "FROM") {
			continue
		}
		froms++
		f = f[1:]
		for len(f) > 0 && strings.HasPrefix(f[0], "--") { // --platform=...
			f = f[1:]
		}
		if len(f) == 0 {
			errs = append(errs, fmt.Errorf("line %d: FROM names no image", i+1))
			continue
		}
		image := f[0]
		switch name, tag, digest := splitImage(image); {
		case image == "scratch" || stages[strings.ToLower(image)]:
		case strings.Contains(image, "$"):
			errs = append(errs, fmt.Errorf("line %d: FROM %s: an image named by a build argument cannot be checked", i+1, image))
		case tag == "latest":
			errs = append(errs, fmt.Errorf("line %d: FROM %s: the tag latest moves; pin a version (or a digest)", i+1, image))
		case tag == "" && digest == "":
			errs = append(errs, fmt.Errorf("line %d: FROM %s: no tag or digest, so latest; pin %s:VERSION (or a digest)", i+1, image, name))
		}
		if len(f) >= 3 && strings.EqualFold(f[1], "AS") {
			stages[strings.ToLower(f[2])] = true
		}
	}
	if froms == 0 {
		errs = append(errs, errors.New("no FROM"))
	}
	return errs
}

// splitImage splits an image reference, [REGISTRY[:PORT]/]NAME[:TAG][@DIGEST].
func splitImage(ref string) (name, tag, digest string) {
	name, digest, _ = strings.Cut(ref, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, tag = name[:i], name[i+1:]
	}
	return name, tag, digest
}

// The Dockerfile check refuses what it should and nothing else.
func TestUnpinnedFroms(t *testing.T) {
	for _, tc := range []struct {
		dockerfile string
		refused    []string // the images refused, in order
	}{
		{"FROM golang:1.26.8-bookworm AS build\nFROM gcr.io/distroless/static-debian12:nonroot\nCOPY --from=build /x /x\n", nil},
		{"FROM golang AS build\nFROM build\n", []string{"golang"}},
		{"FROM golang:latest\n", []string{"golang:latest"}},
		{"from debian@sha256:0123abcd\n", nil},
		{"FROM gcr.io/distroless/static-debian12:latest@sha256:0123abcd\n", []string{"static-debian12:latest"}},
		{"FROM localhost:5000/icecdc\n", []string{"localhost:5000/icecdc"}},
		{"FROM localhost:5000/icecdc:1.2\n", nil},
		{"FROM --platform=$BUILDPLATFORM golang:1.26.8 AS b\nFROM scratch\nCOPY --from=b /x /x\n", nil},
		{"ARG GO=1.26\nFROM golang:${GO}\n", []string{"golang:${GO}"}},
		{"# no image\n", []string{"no FROM"}},
	} {
		errs := unpinnedFroms(tc.dockerfile)
		if len(errs) != len(tc.refused) {
			t.Errorf("%q: errors %v, want %d", tc.dockerfile, errs, len(tc.refused))
			continue
		}
		for i, err := range errs {
			if !strings.Contains(err.Error(), tc.refused[i]) {
				t.Errorf("%q: error %q does not name %s", tc.dockerfile, err, tc.refused[i])
			}
		}
	}
}
