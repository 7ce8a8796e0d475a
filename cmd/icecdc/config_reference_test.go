package main

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// configReference is the page that documents every key of icecdc.yaml.
const configReference = "../../docs/configuration.md"

// leafTypes are struct types that YAML reads as one value, not as a
// mapping of keys.
var leafTypes = []reflect.Type{reflect.TypeFor[time.Duration](), reflect.TypeFor[byteSize]()}

// configKeys walks t as the YAML decoder does and returns the dotted key of
// every setting: nested structs add their key to the path, a list of
// structs adds "[]" (tables[].name), and a map, a list of scalars or a
// scalar is one key (catalog.properties). Fields the decoder skips (yaml
// "-", unexported) are not keys.
func configKeys(t reflect.Type, prefix string) []string {
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if slices.Contains(strings.Split(opts, ","), "inline") {
			if d, ok := reflect.Zero(ft).Interface().(interface{ DocumentedKeys() []string }); ok {
				for _, k := range d.DocumentedKeys() { // an inline map's keys carry parameters
					keys = append(keys, prefix+k)
				}
				continue
			}
			keys = append(keys, configKeys(ft, prefix)...)
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name) // the decoder's default key
		}
		key := prefix + name
		switch {
		case ft.Kind() == reflect.Struct && !slices.Contains(leafTypes, ft):
			keys = append(keys, configKeys(ft, key+".")...)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			keys = append(keys, configKeys(ft.Elem(), key+"[].")...)
		default:
			keys = append(keys, key)
		}
	}
	return keys
}

// documentedKeys returns the keys the reference names in backquotes.
func documentedKeys(doc string) map[string]bool {
	names := map[string]bool{}
	for _, m := range regexp.MustCompile("`([^`\n]+)`").FindAllStringSubmatch(doc, -1) {
		names[m[1]] = true
	}
	return names
}

// TestConfigReferenceListsEveryKey holds docs/configuration.md to the
// Config struct: a field added to the configuration (or to a struct it
// nests: the catalog, tables, sinks, cluster) must be documented there
// under its full dotted key, in backquotes, before the tests pass.
func TestConfigReferenceListsEveryKey(t *testing.T) {
	raw, err := os.ReadFile(configReference)
	if err != nil {
		t.Fatalf("read the configuration reference: %v", err)
	}
	documented := documentedKeys(string(raw))
	keys := configKeys(reflect.TypeFor[Config](), "")
	for _, k := range keys {
		if !documented[k] {
			t.Errorf("%s: config key %s is not documented (add it, with its type, default and meaning)", configReference, k)
		}
	}
	// The walk itself must reach the nested and repeated parts, or the
	// check above would pass by finding nothing to check.
	for _, k := range []string{"name", "catalog.properties", "tables[].name", "poll.interval",
		"debezium.topic.prefix", "sink.webhook.batch.max_events", "sink.kafka.tls.ca_file",
		"sink.kafka.sasl.password", "cluster.kafka.brokers", "max_memory"} {
		if !slices.Contains(keys, k) {
			t.Errorf("the walk of Config did not find %s; found %v", k, keys)
		}
	}
}

// TestConfigKeysWalk checks the walk on a struct of every shape it must
// handle, so that a key hidden behind a pointer, a list or an inline
// struct cannot slip past the reference check.
func TestConfigKeysWalk(t *testing.T) {
	type inner struct {
		Deep int `yaml:"deep"`
	}
	type shapes struct {
		Plain    string            `yaml:"plain"`
		Skipped  string            `yaml:"-"`
		unexp    string            // the decoder skips it too
		Untagged int               // the decoder's key: untagged
		Dur      time.Duration     `yaml:"dur"`
		Size     byteSize          `yaml:"size"`
		Map      map[string]string `yaml:"map"`
		List     []string          `yaml:"list"`
		Ptr      *bool             `yaml:"ptr"`
		Nested   inner             `yaml:"nested"`
		PtrNest  *inner            `yaml:"ptr_nest"`
		Items    []inner           `yaml:"items"`
		Inline   inner             `yaml:",inline"`
	}
	got := configKeys(reflect.TypeFor[shapes](), "")
	want := []string{"plain", "untagged", "dur", "size", "map", "list", "ptr", "nested.deep", "ptr_nest.deep", "items[].deep", "deep"}
	if !slices.Equal(got, want) {
		t.Errorf("configKeys = %v, want %v", got, want)
	}
}
