package main

import (
	"strings"
	"testing"
)

func TestExpandEnv(t *testing.T) {
	getenv := env(map[string]string{"HOST": "db.example", "PW": "s3cr$t", "A_1": "x"})
	tests := []struct {
		name, in, want string
		missing        string
	}{
		{"braced", "${HOST}:5432", "db.example:5432", ""},
		{"name with digit and underscore", "${A_1}", "x", ""},
		{"value keeps its dollar", "${PW}", "s3cr$t", ""},
		{"unbraced stays literal", "pa$word $HOME $1", "pa$word $HOME $1", ""},
		{"lone and double dollar stay literal", "$ 5 $$ 6 end$", "$ 5 $$ 6 end$", ""},
		{"escaped brace", "$${HOST}", "${HOST}", ""},
		{"hash inside a word", "http://h/p#${HOST}", "http://h/p#db.example", ""},
		{"unset", "${NOPE}-${HOST}", "-db.example", "NOPE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			marked, refs := markRefs(tc.in)
			got, _, missing, err := refs.expand(marked, 1, getenv)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || strings.Join(missing, ",") != tc.missing {
				t.Fatalf("expandEnv(%q) = %q, missing %v; want %q, missing %q", tc.in, got, missing, tc.want, tc.missing)
			}
		})
	}
	for _, bad := range []string{"${", "${}", "${A B}", "${1X}"} {
		marked, refs := markRefs(bad)
		if _, _, _, err := refs.expand(marked, 7, getenv); err == nil || !strings.Contains(err.Error(), "line 7") {
			t.Errorf("expandEnv(%q): %v, want an error naming the line", bad, err)
		}
	}
	if _, err := parseConfig([]byte("name: p\ntables:\n  - name: ${\n"), getenv); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("malformed reference on line 3: %v", err)
	}
}

// A secret with dollars and a commented-out reference to an unset
// variable: the config loads, and the secret is what the file says.
func TestConfigDollarsInSecretsAndComments(t *testing.T) {
	cfg := strings.Replace(goodConfig, `secret: "${ICECDC_WEBHOOK_SECRET}"`, `secret: "pa$$word-$HOME-0123456789abcdef"`, 1) +
		"# tls: {cert: ${TLS_CERT}}\n"
	cfg = strings.Replace(cfg, "net_max_rows: 5000", "net_max_rows: 5000 # was ${OLD_ROWS}", 1)
	c, err := parseConfig([]byte(cfg), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Sink.Webhook.Secret != "pa$$word-$HOME-0123456789abcdef" {
		t.Fatalf("secret %q", c.Sink.Webhook.Secret)
	}
}

// TestConfigEnvIsOneValue: a variable's text becomes exactly one value,
// whatever YAML it looks like, and never reaches an error message. The
// text was once pasted into the document before parsing: a newline added
// settings, " #" cut the value short, "*x" was an unknown anchor quoted
// into the error, "!!binary" was decoded, and a PEM key broke the
// document.
func TestConfigEnvIsOneValue(t *testing.T) {
	const pem = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n-----END PRIVATE KEY-----\n"
	values := map[string]string{
		"newline":   "/var/lib/x.db\nhttp: {listen: 0.0.0.0:1}\nallowed_locations: [\"/\"]",
		"hash":      "s3cr3t #tail",
		"anchor":    "*x",
		"binary":    "!!binary aGVsbG8=",
		"pem":       pem,
		"quotes":    `a"b'c\n: {[`,
		"null text": "null",
		"dollar":    "${NOT_A_REF}",
	}
	forms := map[string]string{
		"plain":         "state: {path: ${V}}\n",
		"block":         "state:\n  path: ${V}\n",
		"double-quoted": "state:\n  path: \"${V}\"\n",
		"single-quoted": "state:\n  path: '${V}'\n",
	}
	base := strings.Replace(goodConfig, "state: {path: /var/lib/icecdc/state.db}\n", "", 1)
	for vname, v := range values {
		for fname, form := range forms {
			t.Run(vname+"/"+fname, func(t *testing.T) {
				c, err := parseConfig([]byte(base+form), env(map[string]string{"ICECDC_WEBHOOK_SECRET": testSecret, "V": v}))
				if err != nil {
					t.Fatalf("error: %v", err)
				}
				if c.State.Path != v {
					t.Fatalf("state.path = %q, want the variable's text %q", c.State.Path, v)
				}
				if c.HTTP.Listen != "127.0.0.1:9464" || len(c.AllowedLocations) != 0 {
					t.Fatalf("the variable changed other settings: http.listen %q, allowed_locations %q", c.HTTP.Listen, c.AllowedLocations)
				}
			})
		}
	}
	// A typed setting reads the variable's text as its value.
	c, err := parseConfig([]byte(goodConfig+"chunk: ${N}\nhold_interval: ${D}\nmax_memory: ${M}\n"),
		env(map[string]string{"ICECDC_WEBHOOK_SECRET": testSecret, "N": "100", "D": "5m", "M": "64MiB"}))
	if err != nil || c.Chunk != 100 || c.HoldInterval.String() != "5m0s" || c.MaxMemory != 64<<20 {
		t.Fatalf("typed settings from the environment: %v, %+v", err, c)
	}
	// A value the setting refuses is named by its variable, not quoted.
	for _, secret := range []string{"hunter2-*x", "hunter2\nchunk: 1", "!!binary aGVsbG8="} {
		for _, doc := range []string{"chunk: ${S}\n", "hold_interval: ${S}\n", "max_memory: ${S}\n", "io: {concurrency: ${S}}\n", "debezium: {include.schema.changes: ${S}}\n"} {
			_, err := parseConfig([]byte(goodConfig+doc), env(map[string]string{"ICECDC_WEBHOOK_SECRET": testSecret, "S": secret}))
			if err == nil || !strings.Contains(err.Error(), "the value of ${S}") {
				t.Errorf("%q with S=%q: error %v, want one naming ${S}", doc, secret, err)
			}
			if err != nil && (strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "aGVsbG8")) {
				t.Errorf("%q: the error quotes the variable: %v", doc, err)
			}
		}
	}
}
