package main

import (
	"os"
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
// checked for what makes it work: pinned images, a healthcheck on every
// service another waits for, depends_on with conditions, and an icecdc
// service whose environment fills every ${VAR} of the config it mounts,
// examples/icecdc.compose.yaml (which the interop stage runs for real
// against its loopback servers).
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
}
