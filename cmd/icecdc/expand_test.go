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
		{"braced", "uri: ${HOST}:5432\n", "uri: db.example:5432\n", ""},
		{"name with digit and underscore", "v: ${A_1}", "v: x", ""},
		{"value keeps its dollar", "password: ${PW}\n", "password: s3cr$t\n", ""},
		{"unbraced stays literal", "secret: pa$word $HOME $1\n", "secret: pa$word $HOME $1\n", ""},
		{"lone and double dollar stay literal", "price: $ 5 $$ 6 end$\n", "price: $ 5 $$ 6 end$\n", ""},
		{"escaped brace", "literal: $${HOST}\n", "literal: ${HOST}\n", ""},
		{"comment untouched", "a: 1 # was ${OLD}, $x\n# ${GONE}\nb: ${HOST}\n", "a: 1 # was ${OLD}, $x\n# ${GONE}\nb: db.example\n", ""},
		{"hash inside a word is no comment", "url: http://h/p#${HOST}\n", "url: http://h/p#db.example\n", ""},
		{"hash inside double quotes", `s: "a # ${HOST}" # ${NOPE}` + "\n", `s: "a # db.example" # ${NOPE}` + "\n", ""},
		{"hash inside single quotes", "s: 'it''s # ${HOST}' # ${NOPE}\n", "s: 'it''s # db.example' # ${NOPE}\n", ""},
		{"escaped quote inside double quotes", `s: "x\" # ${HOST}"`, `s: "x\" # db.example"`, ""},
		{"apostrophe inside a plain scalar", "s: it's ${HOST} # ${NOPE}\n", "s: it's db.example # ${NOPE}\n", ""},
		{"unset", "a: ${NOPE}\nb: ${HOST}\n", "a: \nb: db.example\n", "NOPE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, missing, err := expandEnv(tc.in, getenv)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || strings.Join(missing, ",") != tc.missing {
				t.Fatalf("expandEnv(%q) = %q, missing %v; want %q, missing %q", tc.in, got, missing, tc.want, tc.missing)
			}
		})
	}
	for _, bad := range []string{"a: 1\nb: ${\n", "b: ${}", "b: ${A B}", "b: ${1X}"} {
		if _, _, err := expandEnv(bad, getenv); err == nil || !strings.Contains(err.Error(), "line ") {
			t.Errorf("expandEnv(%q): %v, want an error naming the line", bad, err)
		}
	}
	if _, _, err := expandEnv("a: 1\nb: ${\n", getenv); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("malformed reference on line 2: %v", err)
	}
}

// A secret with dollars and a commented-out reference to an unset
// variable: the config loads, and the secret is what the file says.
func TestConfigDollarsInSecretsAndComments(t *testing.T) {
	cfg := strings.Replace(goodConfig, `secret: "${ICECDC_WEBHOOK_SECRET}"`, `secret: "pa$$word-$HOME-0123456789abcdef"`, 1) +
		"# tls: {cert: ${TLS_CERT}}\n"
	c, err := parseConfig([]byte(cfg), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Sink.Webhook.Secret != "pa$$word-$HOME-0123456789abcdef" {
		t.Fatalf("secret %q", c.Sink.Webhook.Secret)
	}
}
