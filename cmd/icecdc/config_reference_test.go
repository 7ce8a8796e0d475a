package main

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
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

// completeExample returns the YAML of docs/configuration.md's "A complete
// example" (its indented block).
func completeExample(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(configReference)
	if err != nil {
		t.Fatalf("read the configuration reference: %v", err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## A complete example\n")
	if !ok {
		t.Fatalf("%s has no section \"A complete example\"", configReference)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var b strings.Builder
	in := false
	for _, l := range strings.Split(section, "\n") {
		if body, ok := strings.CutPrefix(l, "    "); ok {
			in = true
			b.WriteString(body + "\n")
		} else if in && strings.TrimSpace(l) != "" {
			break
		}
	}
	return b.String()
}

// exampleKeys returns the dotted keys a YAML document sets, as configKeys
// names them (a list of sections adds "[]").
func exampleKeys(n *yaml.Node, prefix string, into map[string]bool) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			exampleKeys(c, prefix, into)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := prefix + n.Content[i].Value
			into[key] = true
			exampleKeys(n.Content[i+1], key+".", into)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if c.Kind == yaml.MappingNode {
				exampleKeys(c, strings.TrimSuffix(prefix, ".")+"[].", into)
			}
		}
	}
}

// TestCompleteExampleHasEveryKey holds the reference's "A complete
// example: every key" to the Config struct: each key is set there (a key
// with a parameter, column.mask.with.N.chars, by one instance), and the
// example is a configuration icecdc loads.
func TestCompleteExampleHasEveryKey(t *testing.T) {
	example := completeExample(t)
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(example), &doc); err != nil {
		t.Fatalf("the complete example is not YAML: %v\n%s", err, example)
	}
	set := map[string]bool{}
	exampleKeys(&doc, "", set)
	param := regexp.MustCompile(`\b(N|ALGORITHM|SALT|[A-Z][A-Z_]+)\b`)
	for _, k := range configKeys(reflect.TypeFor[Config](), "") {
		if set[k] {
			continue
		}
		// A key with parameters matches any instance of them.
		re := regexp.MustCompile("^" + param.ReplaceAllString(regexp.QuoteMeta(k), `[^.]+(\.[^.]+)*?`) + "$")
		found := false
		for s := range set {
			if re.MatchString(s) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%s: the complete example leaves out %s", configReference, k)
		}
	}
	if len(set) < 40 {
		t.Fatalf("the complete example sets %d keys: it was not found whole\n%s", len(set), example)
	}
	// It loads: each key set is one icecdc reads, with a value it takes
	// (the secrets come from the environment, here any value).
	if _, err := parseConfig([]byte(example), func(string) string { return "x" }); err != nil {
		t.Errorf("the complete example does not load: %v", err)
	}
}
